// SPDX-License-Identifier: MIT
// The run of `brisk batch`: engine, scheduling, shared prefixes, ordered and
// synced output, progress.
#pragma once
#include <cstdint>
#include <string>

#include "cmd_batch_records.h"

namespace brisk::tools::batch {

struct RunSettings {
  std::string model_path, input_path, output_path;
  uint32_t shard_k = 0, shard_n = 1;
  int parallel = 0;  // 0: the memory plan's largest, at most 64
  int n_threads = 0, n_ctx = 0, n_batch = 512;
  int32_t cache_k = BRISK_TYPE_AUTO, cache_v = BRISK_TYPE_AUTO;
  int prefix_min = 8;  // tokens; 0: no prefix sharing
  bool stop_at_eos = true, no_pin = false, json_summary = false;
  // --mlock, --no-mmap, --plan, --plan-cache (load.plan_cache_dir points
  // into plan_cache). Not in the sidecar: like -t, --parallel and -b they
  // change how the sums are computed, not what is asked for.
  brisk_model_options load{};
  std::string plan_cache;
  double progress_interval = 10;
  Defaults defaults;
};

// Returns the process exit code.
int run(RunSettings& settings);

}  // namespace brisk::tools::batch
