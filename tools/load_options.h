// SPDX-License-Identifier: MIT
// --mlock and --no-mmap, the same on every command that loads a model.
#pragma once
#include <cxxopts.hpp>

#include "brisk/brisk.h"

namespace brisk::tools {

inline void add_load_options(cxxopts::Options& opts) {
  opts.add_options()("mlock", "lock the model in RAM so it is never paged out")(
      "no-mmap", "read the model into memory instead of mapping it (network filesystems)");
}

inline void apply_load_options(const cxxopts::ParseResult& args, brisk_model_options* mo) {
  mo->mlock = args.count("mlock") ? 1 : 0;
  mo->no_mmap = args.count("no-mmap") ? 1 : 0;
}

}  // namespace brisk::tools
