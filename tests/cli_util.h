// SPDX-License-Identifier: MIT
// Running the `brisk` command ($BRISK_BIN) from tests, as a user would.
#pragma once
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "test_data.h"

namespace brisk::test {

struct CliResult {
  int code;  // the exit code; 128 when killed by a signal
  std::string out, err;
};

// The shell command for `brisk ARGS` with stdout and stderr going to files in
// the scratch directory and no stdin.
inline std::string cli_command(const std::string& args) {
  const char* bin = std::getenv("BRISK_BIN");
  REQUIRE(bin);
  const std::string dir = scratch_dir().string();
  return std::string(bin) + " " + args + " >" + dir + "/cli_out.txt 2>" + dir + "/cli_err.txt </dev/null";
}

// What a cli_command wrote, with its exit code.
inline CliResult cli_result(int code) {
  const std::string dir = scratch_dir().string();
  return {code, read_bytes(dir + "/cli_out.txt"), read_bytes(dir + "/cli_err.txt")};
}

inline int exit_code(int system_status) { return WIFEXITED(system_status) ? WEXITSTATUS(system_status) : 128; }

// Runs `brisk ARGS`, capturing stdout and stderr.
inline CliResult run_cli(const std::string& args) {
  return cli_result(exit_code(std::system(cli_command(args).c_str())));
}

}  // namespace brisk::test
