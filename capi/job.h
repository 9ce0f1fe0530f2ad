// brisk_*_options callbacks -> bundle::Job (progress, abort, warnings).
#pragma once
#include <string>

#include "brisk/brisk.h"
#include "bundle/job.h"

namespace brisk::capi {

inline bundle::Job make_job(uint32_t n_threads, brisk_progress_fn progress, void* progress_ud, brisk_abort_fn abort,
                            void* abort_ud, brisk_log_fn log = nullptr, void* log_ud = nullptr) {
  bundle::Job j;
  j.n_threads = static_cast<int>(n_threads);
  if (progress)
    j.progress = [progress, progress_ud](double f, const std::string& what) { progress(progress_ud, f, what.c_str()); };
  if (abort) j.cancelled = [abort, abort_ud] { return abort(abort_ud) != 0; };
  if (log) j.warn = [log, log_ud](const std::string& m) { log(log_ud, BRISK_LOG_WARN, m.c_str()); };
  return j;
}

}  // namespace brisk::capi
