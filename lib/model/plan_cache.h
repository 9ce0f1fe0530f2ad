// SPDX-License-Identifier: MIT
// Kernel plans cached on disk, one JSON file per machine and model shape:
// the key names the CPU (model, stepping), the instruction set in use, the
// cache sizes, the thread count, the planner's version, the build, the shapes and
// types of the model's matrices and the candidate kernels for those types.
// A file whose key differs (another machine, newer kernels) or that does
// not parse is ignored with a warning and measured again. Besides the
// choices it holds the pending variants (kernel_plan.h) and when it was
// measured.
#pragma once
#include <string>
#include <vector>

#include "model/kernel_plan.h"

namespace brisk {

// Bump when kernels, their variants or how they are measured change enough
// that old plans mislead.
constexpr int kPlanVersion = 8;

struct PlanKey {
  std::string json;  // the key as canonical JSON text
  std::string hash;  // 16 hex digits of its XXH64, the file name's tail
};
PlanKey make_plan_key(const Weights& weights, int n_threads);

// The cache directory for options.cache_dir ("" = the default search).
std::string plan_cache_dir(const std::string& option);
std::string plan_cache_path(const std::string& dir, const PlanKey& key);

// Reads a cached plan. Returns false with *why set when the file is absent
// (why = ""), unreadable, corrupt or stale.
bool read_cached_plan(const std::string& path, const PlanKey& key, KernelPlan* plan, std::string* why);
// Writes it atomically (temporary file, then rename); throws brisk::Error.
void write_cached_plan(const std::string& path, const PlanKey& key, const KernelPlan& plan);

}  // namespace brisk
