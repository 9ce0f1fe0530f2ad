// SPDX-License-Identifier: MIT
// brisk calibrate: run a model over the user's text and record the
// activation statistics of every weight matrix (see stats.h), resumably.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "calibration/data.h"
#include "calibration/stats.h"
#include "core/mapped_file.h"

namespace brisk::calib {

struct CalibrateOptions {
  std::vector<std::string> data;  // files or directories
  DataOptions data_options;
  int n_ctx = 0;                  // 0: min(training context, 512)
  uint64_t max_tokens = 0;        // 0: all the calibration text
  bool resume = false;            // continue the partial file at the output path
  int n_threads = 0;
  MapOptions input;  // how the model file is brought in (mlock, read into memory)
  double checkpoint_seconds = 60;  // how often a partial file is saved
  // (tokens done, tokens total); return false to stop: the partial file is
  // then saved and BRISK_ERR_CANCELLED thrown.
  std::function<bool(uint64_t, uint64_t)> progress;
  std::function<void(const std::string&)> log;
};

// Writes the statistics to out_path (atomically, also each checkpoint).
StatsInfo calibrate(const std::string& model_path, const std::string& out_path, const CalibrateOptions& options);

// XXH3 of the model file (identifies what the statistics belong to), read
// as `how` says but never locked: the bytes are needed only for a moment.
std::string model_hash(const std::string& model_path, const MapOptions& how = {});

}  // namespace brisk::calib
