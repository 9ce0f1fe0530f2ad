// SPDX-License-Identifier: MIT
#include "bundle/job.h"

#include <algorithm>
#include <thread>

namespace brisk::bundle {

int Job::threads() const {
  if (n_threads > 0) return n_threads;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace brisk::bundle
