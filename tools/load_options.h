// SPDX-License-Identifier: MIT
// Options of every command that loads a model for inference, spelled alike:
// --mlock, --no-mmap, and how the kernel plan is chosen (--plan,
// --plan-cache; brisk.h, brisk_plan_mode). Commands that read a model file
// without choosing kernels (quantize, calibrate, verify, convert, pack) take
// the first two alone (add_read_options).
#pragma once
#include <cxxopts.hpp>
#include <string>

#include "brisk/brisk.h"

namespace brisk::tools {

// --mlock and --no-mmap; `what` names the file they apply to ("the input model").
// Commands that only read (quantize, verify) lock it for as long as they read it.
inline void add_read_options(cxxopts::Options& opts, const std::string& what) {
  opts.add_options()("mlock", "lock " + what + " in RAM so it is never paged out (mlock; refused beyond RLIMIT_MEMLOCK)")(
      "no-mmap", "read " + what + " into memory instead of mapping it (network filesystems)");
}

// Sets the mlock and no_mmap fields that every option struct reading a model file has.
template <class Options>
void apply_read_options(const cxxopts::ParseResult& args, Options* o) {
  o->mlock = args.count("mlock") ? 1 : 0;
  o->no_mmap = args.count("no-mmap") ? 1 : 0;
}

// `lists`: the command takes comma-separated lists of plans (brisk bench).
inline void add_load_options(cxxopts::Options& opts, bool lists = false) {
  add_read_options(opts, "the model");
  const std::string plan =
      "kernel plan: auto (cached, else measured and cached), fixed (the ISA's baseline kernels, reproducible), "
      "measure (measure again); default $BRISK_PLAN or auto";
  const std::string cache = "directory of cached kernel plans (default ~/.cache/brisk)";
  opts.add_options()("plan", lists ? plan + "; a comma-separated list runs each, the model opened once per plan "
                                            "(memory for each copy of the repacked weights)"
                                   : plan,
                     cxxopts::value<std::string>())(
      "plan-cache", lists ? cache + "; one, or as many as --plan (a list of directories runs each)" : cache,
      cxxopts::value<std::string>());
}

// One --plan value; false if unknown.
inline bool parse_plan_mode(const std::string& v, int64_t* out) {
  if (v == "auto") *out = BRISK_PLAN_AUTO;
  else if (v == "fixed") *out = BRISK_PLAN_FIXED;
  else if (v == "measure") *out = BRISK_PLAN_MEASURE;
  else return false;
  return true;
}

// Parses --plan; false (with a usage message printed by the caller) if unknown.
inline bool plan_mode_arg(const cxxopts::ParseResult& args, int64_t* out) {
  *out = BRISK_PLAN_DEFAULT;
  return !args.count("plan") || parse_plan_mode(args["plan"].as<std::string>(), out);
}

// Sets mo's load options from args. The plan is measured with the threads
// the command will run (-t), when it has that option. `storage` keeps the
// cache directory's text alive while mo points at it.
inline bool apply_load_options(const cxxopts::ParseResult& args, brisk_model_options* mo, std::string* storage) {
  apply_read_options(args, mo);
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
