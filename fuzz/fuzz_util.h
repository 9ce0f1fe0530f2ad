// SPDX-License-Identifier: MIT
// Shared by the fuzz targets: expected failures are brisk::Error; anything
// else (another exception, a crash, a sanitizer report) is a finding.
#pragma once
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "tests/exit_scoped_dir.h"

namespace brisk::fuzz {

template <class F>
void expect_clean(F&& body) {
  try {
    body();
  } catch (const Error& e) {
    // a clean, reported failure: what hostile input should give
    static const bool verbose = std::getenv("BRISK_FUZZ_VERBOSE") != nullptr;
    if (verbose) std::fprintf(stderr, "fuzz: refused: %s\n", e.what());
  }
}

// Stops the process the way a sanitizer would, so libFuzzer saves the input.
[[noreturn]] inline void finding(const char* what) {
  std::fprintf(stderr, "fuzz: invariant failed: %s\n", what);
  __builtin_trap();
}

// The input as a file path (memfd: no disk I/O) for readers that map files.
// Each slot is its own file, for targets that need several inputs at once.
inline std::string as_file(const uint8_t* data, size_t size, int slot = 0) {
  static int fds[4] = {-1, -1, -1, -1};
  if (slot < 0 || slot >= 4) std::abort();
  if (fds[slot] < 0) fds[slot] = memfd_create("brisk-fuzz", 0);
  const int fd = fds[slot];
  if (fd < 0) std::abort();
  if (ftruncate(fd, 0) != 0 || (size && pwrite(fd, data, size, 0) != static_cast<ssize_t>(size))) std::abort();
  return "/proc/self/fd/" + std::to_string(fd);
}
inline std::string as_file(std::string_view s, int slot = 0) {
  return as_file(reinterpret_cast<const uint8_t*>(s.data()), s.size(), slot);
}

// A private directory under $TMPDIR (or /tmp) for targets that write files,
// removed at exit.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    std::filesystem::path d = brisk::test::make_exit_scoped_dir("brisk-fuzz");
    if (d.empty()) std::abort();
    return d;
  }();
  return dir;
}

// Names in a directory, sorted (to check that a failed write left nothing).
inline std::vector<std::string> dir_entries(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Splits the input at '\0' bytes into at most max_parts pieces (the last
// takes the rest): a simple framing that mutations keep intact.
inline std::vector<std::string_view> split_input(const uint8_t* data, size_t size, size_t max_parts) {
  std::vector<std::string_view> parts;
  std::string_view s(reinterpret_cast<const char*>(data), size);
  while (parts.size() + 1 < max_parts) {
    const size_t z = s.find('\0');
    if (z == std::string_view::npos) break;
    parts.push_back(s.substr(0, z));
    s.remove_prefix(z + 1);
  }
  parts.push_back(s);
  return parts;
}

}  // namespace brisk::fuzz
