// SPDX-License-Identifier: MIT
// brisk_*_options callbacks -> bundle::Job (progress, abort, warnings).
#pragma once
#include <memory>
#include <string>

#include "brisk/brisk.h"
#include "bundle/job.h"

namespace brisk::capi {

// Fractions are reported as done/total in millionths; a progress callback that
// returns non-zero cancels, like the abort callback.
inline bundle::Job make_job(const char* stage, uint32_t n_threads, brisk_progress_fn progress, void* progress_ud,
                            brisk_abort_fn abort, void* abort_ud, brisk_log_fn log = nullptr, void* log_ud = nullptr) {
  bundle::Job j;
  j.n_threads = static_cast<int>(n_threads);
  auto stop = std::make_shared<bool>(false);
  if (progress)
    j.progress = [stage, progress, progress_ud, stop](double f, const std::string& what) {
      const uint64_t done = static_cast<uint64_t>(f < 0 ? 0 : f > 1 ? 1e6 : f * 1e6);
      if (progress(progress_ud, stage, done, 1000000, what.c_str()) != 0) *stop = true;
    };
  j.cancelled = [abort, abort_ud, stop] { return *stop || (abort && abort(abort_ud) != 0); };
  if (log) j.warn = [log, log_ud](const std::string& m) { log(log_ud, BRISK_LOG_WARN, m.c_str()); };
  return j;
}

}  // namespace brisk::capi
