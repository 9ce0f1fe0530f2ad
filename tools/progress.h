// Progress lines and Ctrl-C handling shared by convert, verify and pack.
// Progress goes to stderr only when it is a terminal, so logs stay clean.
#pragma once
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <string>

#include "brisk/brisk.h"

namespace brisk::tools {

inline volatile std::sig_atomic_t g_file_op_interrupted = 0;

// Installs a SIGINT handler that makes file_op_abort() return 1, so a
// cancelled operation unwinds and removes its temporary file.
inline void catch_sigint() {
  std::signal(SIGINT, [](int) { g_file_op_interrupted = 1; });
}
inline int file_op_abort(void*) { return g_file_op_interrupted; }

inline int file_op_progress(void*, const char*, uint64_t done, uint64_t total, const char* what) {
  static const bool tty = ::isatty(2);
  if (!tty) return 0;
  const double fraction = total ? static_cast<double>(done) / static_cast<double>(total) : 0.0;
  std::string w = what;
  if (w.size() > 60) w = w.substr(0, 57) + "...";
  std::fprintf(stderr, "\r%5.1f%% %-60s", 100.0 * fraction, w.c_str());
  if (fraction >= 1.0) std::fprintf(stderr, "\r%-68s\r", "");
  std::fflush(stderr);
  return 0;
}

inline void file_op_log(void*, brisk_log_level, const char* message) {
  if (::isatty(2)) std::fprintf(stderr, "\r%-68s\r", "");
  std::fprintf(stderr, "warning: %s\n", message);
}

}  // namespace brisk::tools
