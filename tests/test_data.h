// SPDX-License-Identifier: MIT
// Finding ../shared test data. Tests call test_file("models/x.gguf"): it
// returns the path, or skips the test with a message when the data is absent,
// except under CI=true, where a missing file fails the test.
#pragma once
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <unistd.h>

#include "exit_scoped_dir.h"

namespace brisk::test {

inline std::string test_data_root() {
  const char* env = std::getenv("BRISK_TEST_DATA");
  return env && *env ? env : BRISK_DEFAULT_TEST_DATA;
}

inline bool under_ci() {
  const char* ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
}

// Catch2 v2 has no SKIP: a test without its data passes with a warning.
#define BRISK_TEST_FILE(var, rel)                                                    \
  std::string var = ::brisk::test::test_data_root() + "/" + (rel);                   \
  if (!std::filesystem::exists(var)) {                                               \
    if (::brisk::test::under_ci()) FAIL("missing test data under CI: " << var);      \
    WARN("skipped: test data not found: " << var << " (set BRISK_TEST_DATA)");       \
    return;                                                                          \
  }

// A private scratch directory under $TMPDIR (or /tmp), one per test
// process, removed when the process exits.
inline std::filesystem::path scratch_dir() {
  static const std::filesystem::path dir = [] {
    std::filesystem::path d = make_exit_scoped_dir("brisk-test");
    if (d.empty()) throw std::runtime_error("cannot create a scratch directory under " +
                                            std::filesystem::temp_directory_path().string());
    return d;
  }();
  return dir;
}

// A file's bytes ("" when it cannot be read), and writing them.
inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace brisk::test
