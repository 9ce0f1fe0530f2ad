// Helpers shared by the subcommands: error reporting and timing.
#pragma once
#include <chrono>
#include <cstdio>
#include <string>

#include "brisk/brisk.h"

namespace brisk::tools {

// Prints "brisk CMD: error: <last error>" and returns exit code 1.
inline int report(const char* cmd, brisk_status st) {
  std::fprintf(stderr, "brisk %s: error: %s (%s)\n", cmd, brisk_last_error(), brisk_status_name(st));
  return 1;
}

inline double now_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// Parses a type name ("f16", "q8_0", ...; "auto" gives BRISK_TYPE_AUTO).
// Returns false for unknown names.
bool parse_type(const std::string& name, int32_t* out);

// Reads a whole file; returns false (and prints why) on failure.
bool read_file(const char* cmd, const std::string& path, std::string* out);

}  // namespace brisk::tools
