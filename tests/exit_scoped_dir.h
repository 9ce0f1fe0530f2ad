// SPDX-License-Identifier: MIT
// Private scratch directories for tests and fuzz replays, removed at exit.
#pragma once
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include <stdlib.h>

namespace brisk::test {

// Makes $TMPDIR/<prefix>-XXXXXX (or under /tmp), readable by this user
// only, and removes it with its contents when the process exits. Returns
// an empty path if it cannot be made. The list of directories lives on the
// heap: a function-local static would be destroyed before an exit handler
// registered while it was being built runs, and nothing would be removed.
inline std::filesystem::path make_exit_scoped_dir(const std::string& prefix) {
  static std::vector<std::filesystem::path>* const dirs = [] {
    auto* v = new std::vector<std::filesystem::path>;
    std::atexit([] {
      for (const auto& d : *dirs) {
        std::error_code ec;
        std::filesystem::remove_all(d, ec);
      }
    });
    return v;
  }();
  std::string t = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (!::mkdtemp(t.data())) return {};
  dirs->push_back(t);
  return t;
}

}  // namespace brisk::test
