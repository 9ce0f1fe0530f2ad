#include "core/atomic_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace brisk {

AtomicFile::AtomicFile(const std::string& target) : target_(target) {
  tmp_ = target + ".tmp." + std::to_string(::getpid());
  f_ = std::fopen(tmp_.c_str(), "wb");
  if (!f_) fail(BRISK_ERR_IO, "cannot create '" + tmp_ + "': " + std::strerror(errno));
}

AtomicFile::~AtomicFile() {
  if (f_) std::fclose(f_);
  if (!committed_) std::remove(tmp_.c_str());
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
  std::fclose(f_);
  f_ = nullptr;
  if (std::rename(tmp_.c_str(), target_.c_str()) != 0)
    fail(BRISK_ERR_IO, "cannot rename '" + tmp_ + "' to '" + target_ + "': " + std::strerror(errno));
  committed_ = true;
}

}  // namespace brisk
