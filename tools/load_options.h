// SPDX-License-Identifier: MIT
// Options of every command that loads a model for inference, spelled alike:
// --mlock, --no-mmap, and how the kernel plan is chosen (--plan,
// --plan-cache; brisk.h, brisk_plan_mode).
#pragma once
#include <cxxopts.hpp>
#include <string>

#include "brisk/brisk.h"

namespace brisk::tools {

inline void add_load_options(cxxopts::Options& opts) {
  opts.add_options()("mlock", "lock the model in RAM so it is never paged out")(
      "no-mmap", "read the model into memory instead of mapping it (network filesystems)")(
      "plan", "kernel plan: auto (cached, else measured and cached), fixed (each ISA's defaults, reproducible), "
              "measure (measure again); default $BRISK_PLAN or auto",
      cxxopts::value<std::string>())("plan-cache", "directory of cached kernel plans (default ~/.cache/brisk)",
                                     cxxopts::value<std::string>());
}

// Parses --plan; false (with a usage message printed by the caller) if unknown.
inline bool plan_mode_arg(const cxxopts::ParseResult& args, int64_t* out) {
  *out = BRISK_PLAN_DEFAULT;
  if (!args.count("plan")) return true;
  const std::string v = args["plan"].as<std::string>();
  if (v == "auto") *out = BRISK_PLAN_AUTO;
  else if (v == "fixed") *out = BRISK_PLAN_FIXED;
  else if (v == "measure") *out = BRISK_PLAN_MEASURE;
  else return false;
  return true;
}

// Sets mo's load options from args. The plan is measured with the threads
// the command will run (-t), when it has that option. `storage` keeps the
// cache directory's text alive while mo points at it.
inline bool apply_load_options(const cxxopts::ParseResult& args, brisk_model_options* mo, std::string* storage) {
  mo->mlock = args.count("mlock") ? 1 : 0;
  mo->no_mmap = args.count("no-mmap") ? 1 : 0;
  if (!plan_mode_arg(args, &mo->plan_mode)) return false;
  if (args.count("plan-cache")) {
    *storage = args["plan-cache"].as<std::string>();
    mo->plan_cache_dir = storage->c_str();
  }
  try {
    if (args.count("threads")) mo->plan_threads = std::max(0, args["threads"].as<int>());
  } catch (const std::exception&) {
  }
  return true;
}

}  // namespace brisk::tools
