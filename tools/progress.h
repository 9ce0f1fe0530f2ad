// SPDX-License-Identifier: MIT
// The one progress display of the `brisk` commands, and their Ctrl-C
// handling. Header-only so the test suite can drive it with its own clock.
#pragma once
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

#include "brisk/brisk.h"

namespace brisk::tools {

inline volatile std::sig_atomic_t g_interrupted = 0;

// Makes the first Ctrl-C a request to stop: long calls see it through their
// abort or progress callback and unwind (a cancelled output is never left
// half-written; calibrate saves what it has).
inline void catch_sigint() {
  std::signal(SIGINT, [](int) { g_interrupted = 1; });
}
inline bool interrupted() { return g_interrupted != 0; }
// A brisk_abort_fn.
inline int abort_requested(void*) { return g_interrupted; }

// Progress of long calls on stderr (stdout stays for results):
//  - on a terminal, one line redrawn in place: stage, a bar, percentage,
//    counts, ETA and what is being worked on;
//  - otherwise (logs, CI), plain lines: none for a job that ends within the
//    first period, then one per period, so a log shows that a long job is
//    alive without filling up.
// A new stage (quantize goes through "sensitivity", "quantize", "ppl")
// restarts the percentage and the ETA.
class Progress {
 public:
  struct Display {
    FILE* out = stderr;
    bool terminal = ::isatty(2) != 0;
    double period = 10;  // seconds between plain lines
    std::function<double()> clock = [] {
      using namespace std::chrono;
      return duration<double>(steady_clock::now().time_since_epoch()).count();
    };
    int width = 0;  // columns; 0: the terminal's (80 if unknown)
  };

  // units: what done/total count ("tokens", "chunks"); empty when the counts
  // mean nothing to a reader (millionths of a file), then only the percentage.
  explicit Progress(std::string units = "") : Progress(std::move(units), Display()) {}
  Progress(std::string units, Display d) : units_(std::move(units)), d_(std::move(d)) {
    if (d_.width <= 0) {
      winsize ws{};
      d_.width = d_.terminal && ::ioctl(2, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20 ? ws.ws_col : 80;
    }
  }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress() { finish(); }

  void update(const std::string& stage, uint64_t done, uint64_t total, const std::string& detail) {
    const double now = d_.clock();
    if (stage != stage_ || t0_ < 0) {
      finish();
      stage_ = stage;
      t0_ = last_ = now;
    }
    done_ = done;
    total_ = total;
    detail_ = detail;
    if (d_.terminal) {
      if (now - last_ < 0.2 && drawn_ && done < total) return;
      last_ = now;
      draw(now);
    } else if (now - last_ >= d_.period) {
      last_ = now;
      std::fprintf(d_.out, "%s\n", text(now, false).c_str());
      std::fflush(d_.out);
    }
  }

  // A line of its own (a warning, a per-item report) that does not break the bar.
  void line(const std::string& s) {
    clear();
    std::fprintf(d_.out, "%s\n", s.c_str());
    if (d_.terminal && t0_ >= 0) draw(d_.clock());
    std::fflush(d_.out);
  }

  // Erases the bar until the next update (before writing to stdout, which
  // may be the same terminal).
  void clear() {
    if (drawn_) std::fprintf(d_.out, "\r\033[K");
    drawn_ = false;
  }

  // Ends the current stage: the bar is erased (the command prints its own summary).
  void finish() {
    clear();
    t0_ = -1;
    stage_.clear();
  }

  // A brisk_progress_fn (user data: the Progress). Returns non-zero after
  // Ctrl-C so the call cancels.
  static int callback(void* self, const char* stage, uint64_t done, uint64_t total, const char* detail) {
    static_cast<Progress*>(self)->update(stage ? stage : "", done, total, detail ? detail : "");
    return g_interrupted;
  }
  // A brisk_log_fn (user data: the Progress).
  static void log(void* self, brisk_log_level level, const char* message) {
    const char* prefix = level == BRISK_LOG_ERROR ? "error: " : level == BRISK_LOG_WARN ? "warning: " : "";
    static_cast<Progress*>(self)->line(prefix + std::string(message ? message : ""));
  }

 private:
  static std::string duration_text(double s) {
    char b[32];
    const long t = static_cast<long>(s + 0.5);
    if (t >= 3600) std::snprintf(b, sizeof b, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else std::snprintf(b, sizeof b, "%ldm%02lds", t / 60, t % 60);
    return b;
  }

  // Built by appending only (GCC 12 misreports "literal" + string&& under -Wrestrict).
  std::string text(double now, bool bar) const {
    const double f = total_ ? std::min(1.0, static_cast<double>(done_) / static_cast<double>(total_)) : 0.0;
    char pct[16];
    std::snprintf(pct, sizeof pct, "%5.1f%%", 100.0 * f);
    std::string s = stage_;
    s += bar ? " " : ": ";
    if (bar) {
      const size_t w = 20, fill = static_cast<size_t>(f * w + 0.5);
      s += '[';
      s.append(fill, '#').append(w - fill, '.');
      s += "] ";
    }
    s += pct;
    if (!units_.empty()) {
      s += " (";
      s += std::to_string(done_);
      s += '/';
      s += std::to_string(total_);
      s += ' ';
      s += units_;
      s += ')';
    }
    if (!bar) {
      s += ", ";
      s += duration_text(now - t0_);
      s += " so far";
    }
    if (done_ > 0 && total_ > done_ && now > t0_) {
      s += ", ETA ";
      s += duration_text((now - t0_) / static_cast<double>(done_) * static_cast<double>(total_ - done_));
    }
    if (!detail_.empty()) {
      s += "  ";
      s += detail_;
    }
    return s;
  }

  void draw(double now) {
    std::string s = text(now, true);
    const size_t cols = static_cast<size_t>(d_.width - 1);  // never wrap: \r redraws one line only
    if (s.size() > cols) s = s.substr(0, cols);
    std::fprintf(d_.out, "\r\033[K%s", s.c_str());
    std::fflush(d_.out);
    drawn_ = true;
  }

  std::string units_;
  Display d_;
  std::string stage_, detail_;
  uint64_t done_ = 0, total_ = 0;
  double t0_ = -1, last_ = -1;
  bool drawn_ = false;
};

}  // namespace brisk::tools
