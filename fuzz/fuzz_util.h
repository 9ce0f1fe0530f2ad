// Shared by the fuzz targets: expected failures are brisk::Error; anything
// else (another exception, a crash, a sanitizer report) is a finding.
#pragma once
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/error.h"

namespace brisk::fuzz {

template <class F>
void expect_clean(F&& body) {
  try {
    body();
  } catch (const Error&) {
    // a clean, reported failure: what hostile input should give
  }
}

// The input as a file path (memfd: no disk I/O) for readers that map files.
inline std::string as_file(const uint8_t* data, size_t size) {
  static int fd = memfd_create("brisk-fuzz", 0);
  if (fd < 0) std::abort();
  if (ftruncate(fd, 0) != 0 || (size && pwrite(fd, data, size, 0) != static_cast<ssize_t>(size))) std::abort();
  return "/proc/self/fd/" + std::to_string(fd);
}

}  // namespace brisk::fuzz
