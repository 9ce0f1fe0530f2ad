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

// The name of a brisk_type value ("q4_k"); "?" for ids the table lacks.
const char* type_name(int32_t type);

// "3.4M", "3558880", "512K", "1.5G" -> bytes (K = 1024). Returns false if malformed.
bool parse_size(const std::string& text, uint64_t* out);

// Progress with an ETA on stderr, redrawn in place on a terminal and printed
// at most every few seconds otherwise.
class ProgressLine {
 public:
  explicit ProgressLine(const char* what) : what_(what) {}
  void update(uint64_t done, uint64_t total, const std::string& detail);
  void finish();

 private:
  const char* what_;
  double t0_ = -1, last_ = -1;
  bool drawn_ = false;
};

// Reads a whole file; returns false (and prints why) on failure.
bool read_file(const char* cmd, const std::string& path, std::string* out);

}  // namespace brisk::tools
