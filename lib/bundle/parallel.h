// SPDX-License-Identifier: MIT
// Runs independent tasks on worker threads while the calling thread reports
// progress and polls the caller's cancel callback (Job callbacks are only
// ever called from the caller's thread). Used to hash tensors and to
// quantize rows.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "bundle/job.h"

namespace brisk::bundle {

struct TaskState {
  std::atomic<uint64_t> done{0};  // work units finished, for progress
  std::atomic<bool> stop{false};  // set on cancel or error: return early
};

// Calls body(i, state) for every i in [0, n), each exactly once, on
// min(threads, n) threads; tasks are taken in index order. Progress goes to
// job as f0 + (f1 - f0) * done / total. The first exception thrown by a body
// (or BRISK_ERR_CANCELLED) is rethrown once every worker has stopped.
void parallel_for(size_t n, int threads, const Job& job, uint64_t total, double f0, double f1,
                  const std::string& what, const std::function<void(size_t i, TaskState& state)>& body);

}  // namespace brisk::bundle
