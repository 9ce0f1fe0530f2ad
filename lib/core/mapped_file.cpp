#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace brisk {

MappedFile::MappedFile(const std::string& path) : path_(path) {
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
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  int e = errno;
  ::close(fd);
  if (p == MAP_FAILED) fail(BRISK_ERR_IO, "cannot map '" + path + "': " + std::strerror(e));
  data_ = static_cast<const uint8_t*>(p);
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

void release_pages(const void* p, size_t n) {
  static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  // Only whole pages inside the range: its neighbours may still be in use.
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) & ~(page - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) & ~(page - 1);
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

}  // namespace brisk
