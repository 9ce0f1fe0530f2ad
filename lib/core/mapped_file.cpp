// SPDX-License-Identifier: MIT
#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error.h"

namespace brisk {

namespace {

std::string mib(uint64_t bytes) {
  if (bytes == RLIM_INFINITY) return "unlimited";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / 1048576.0);
  return buf;
}

// Anonymous memory holding the file's bytes, read-only afterwards (unmapped
// the same way as a file mapping). MAP_FAILED with errno set on failure.
void* read_whole(int fd, size_t size, const std::string& path) {
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    ::close(fd);
    fail(BRISK_ERR_OUT_OF_MEMORY, "cannot allocate " + mib(size) + " to read '" + path + "' into");
  }
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd, static_cast<uint8_t*>(p) + done, size - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = n < 0 ? errno : EIO;
      ::munmap(p, size);
      ::close(fd);
      fail(BRISK_ERR_IO, "cannot read '" + path + "': " + (n < 0 ? std::strerror(e) : "the file shrank while being read"));
    }
    done += static_cast<size_t>(n);
  }
  ::mprotect(p, size, PROT_READ);
  return p;
}

[[noreturn]] void fail_lock(const std::string& path, size_t size, int e) {
  struct rlimit lim {};
  ::getrlimit(RLIMIT_MEMLOCK, &lim);
  fail(e == ENOMEM || e == EPERM || e == EAGAIN ? BRISK_ERR_OUT_OF_MEMORY : BRISK_ERR_IO,
       "cannot lock '" + path + "' (" + mib(size) + ") in memory: " + std::strerror(e) + "; RLIMIT_MEMLOCK is " +
           mib(lim.rlim_cur) + " (hard limit " + mib(lim.rlim_max) +
           "): raise it ('ulimit -l', LimitMEMLOCK= in a systemd unit, --ulimit memlock in docker) or load without mlock");
}

}  // namespace

MappedFile::MappedFile(const std::string& path, const MapOptions& options) : path_(path), options_(options) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    fail(errno == ENOENT ? BRISK_ERR_NOT_FOUND : BRISK_ERR_IO,
         "cannot open '" + path + "': " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    fail(BRISK_ERR_IO, "cannot stat '" + path + "': " + std::strerror(e));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    fail(BRISK_ERR_INVALID_ARGUMENT, "'" + path + "' is a directory, not a model file");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(BRISK_ERR_INVALID_ARGUMENT, "'" + path + "' is not a regular file");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ == 0) {
    ::close(fd);
    return;  // an empty file maps to nothing; the format reader reports it
  }
  void* p = options.read_into_memory ? read_whole(fd, size_, path) : ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  int e = errno;
  ::close(fd);
  if (p == MAP_FAILED) fail(BRISK_ERR_IO, "cannot map '" + path + "': " + std::strerror(e));
  data_ = static_cast<const uint8_t*>(p);
  if (options.lock && ::mlock(p, size_) != 0) {
    e = errno;
    ::munmap(p, size_);
    data_ = nullptr;
    fail_lock(path, size_, e);
  }
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

void MappedFile::prefetch(size_t offset, size_t len) const {
  if (!data_ || offset >= size_) return;
  size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  size_t start = offset & ~(page - 1);
  size_t end = offset + (len < size_ - offset ? len : size_ - offset);
  ::madvise(const_cast<uint8_t*>(data_) + start, end - start, MADV_WILLNEED);
}

void MappedFile::release(const void* p, size_t n) const { release_pages(p, n, options_); }

void release_pages(const void* p, size_t n, const MapOptions& how) {
  if (!how.read_into_memory) release_pages(p, n);
}

void release_pages(const void* p, size_t n) {
  static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  // Only whole pages inside the range: its neighbours may still be in use.
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) & ~(page - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) & ~(page - 1);
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

}  // namespace brisk
