// SPDX-License-Identifier: MIT
#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace brisk {

namespace {

// 64 random bits as hex: a name nobody can predict, so another user cannot
// plant a file or link there first (O_EXCL would refuse it, but the write
// would fail instead of succeeding).
std::string random_suffix() {
  uint64_t r = 0;
  size_t got = 0;
  while (got < sizeof r) {
    const ssize_t k = ::getrandom(reinterpret_cast<char*>(&r) + got, sizeof r - got, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) fail(BRISK_ERR_IO, std::string("cannot get random bytes for a temporary name: ") + std::strerror(errno));
    got += static_cast<size_t>(k);
  }
  char buf[17];
  static const char* hex = "0123456789abcdef";
  for (int i = 0; i < 16; ++i) buf[i] = hex[(r >> (4 * i)) & 15];
  buf[16] = '\0';
  return buf;
}

std::string parent_dir(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

AtomicFile::AtomicFile(const std::string& target) : target_(target) {
  int fd = -1;
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    tmp_ = target + ".tmp." + random_suffix();
    // Exclusive and never through a symlink: the temporary is always a file
    // this call created. 0666 is narrowed by the umask, as for any new file.
    fd = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) fail(BRISK_ERR_IO, "cannot create '" + tmp_ + "': " + std::strerror(errno));
  f_ = ::fdopen(fd, "wb");
  if (!f_) {
    const int e = errno;
    ::close(fd);
    ::unlink(tmp_.c_str());
    fail(BRISK_ERR_IO, "cannot open '" + tmp_ + "': " + std::strerror(e));
  }
}

AtomicFile::~AtomicFile() {
  if (f_) std::fclose(f_);
  if (!committed_) ::unlink(tmp_.c_str());
}

void AtomicFile::write(const void* p, size_t n) {
  if (n && std::fwrite(p, 1, n, f_) != n) fail(BRISK_ERR_IO, "writing '" + tmp_ + "' failed: " + std::strerror(errno));
  written_ += n;
}

void AtomicFile::flush() {
  if (std::fflush(f_) != 0) fail(BRISK_ERR_IO, "writing '" + tmp_ + "' failed: " + std::strerror(errno));
}

void AtomicFile::patch(uint64_t offset, const void* p, size_t n) {
  if (offset > written_ || n > written_ - offset)
    fail(BRISK_ERR_INTERNAL, "patch of " + std::to_string(n) + " bytes at " + std::to_string(offset) +
                                 " lies beyond the " + std::to_string(written_) + " bytes written");
  flush();
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t k = ::pwrite(::fileno(f_), c, n, static_cast<off_t>(offset));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) fail(BRISK_ERR_IO, "writing '" + tmp_ + "' failed: " + std::strerror(errno));
    c += k;
    n -= static_cast<size_t>(k);
    offset += static_cast<uint64_t>(k);
  }
}

void AtomicFile::commit() {
  if (std::fflush(f_) != 0 || ::fsync(::fileno(f_)) != 0)
    fail(BRISK_ERR_IO, "writing '" + tmp_ + "' failed: " + std::strerror(errno));
  const int closed = std::fclose(f_);
  f_ = nullptr;
  if (closed != 0) fail(BRISK_ERR_IO, "writing '" + tmp_ + "' failed: " + std::strerror(errno));
  if (std::rename(tmp_.c_str(), target_.c_str()) != 0)
    fail(BRISK_ERR_IO, "cannot rename '" + tmp_ + "' to '" + target_ + "': " + std::strerror(errno));
  committed_ = true;
  // The rename is durable only once the directory entry is on disk too.
  const std::string dir = parent_dir(target_);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return;  // a directory we may write but not read: nothing more we can do
  const int synced = ::fsync(dfd);
  const int e = errno;
  ::close(dfd);
  // Some file systems cannot sync a directory (EINVAL); the data itself is safe.
  if (synced != 0 && e != EINVAL) fail(BRISK_ERR_IO, "cannot sync directory '" + dir + "': " + std::strerror(e));
}

// Whole-text convenience for small outputs (reports, JSON).
void write_file_atomic(const std::string& path, const std::string& bytes) {
  AtomicFile f(path);
  f.write(bytes.data(), bytes.size());
  f.commit();
}

}  // namespace brisk
