// SPDX-License-Identifier: MIT
// Activation statistics of every weight matrix and the file that holds them.
//
// The file is a GGUF in llama.cpp's imatrix layout (general.type "imatrix",
// tensors "<matrix>.in_sum2" = per-column sum of squared inputs and
// "<matrix>.counts" = how many input columns were summed), so brisk reads
// llama-imatrix files and llama.cpp can read ours. brisk adds
// brisk.calibration.* keys: the version, the data used (paths, XXH3 hashes,
// how each file was split), the model's hash, and how far a run got (for
// --resume). docs/calibration.md documents every key.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "calibration/data.h"
#include "gguf/gguf.h"
#include "model/matmul_op.h"
#include "quantize/quantize.h"

namespace brisk::calib {

constexpr uint32_t kStatsVersion = 1;

struct MatrixStats {
  std::vector<double> sum2;  // per input column
  uint64_t count = 0;        // input columns (tokens) seen
};

// What a statistics file says about how it was made.
struct StatsInfo {
  uint32_t version = 0;  // 0: a llama.cpp imatrix without brisk keys
  bool complete = true;
  std::string model_path, model_hash;
  int n_ctx = 0;
  uint32_t chunks_done = 0, chunks_total = 0;
  uint64_t tokens_done = 0, tokens_available = 0, token_budget = 0;
  double holdout = 0;
  std::string jsonl_field = "text";
  std::vector<DataSource> sources;  // texts not loaded: path, hash, bytes, split sizes
};

struct Stats {
  StatsInfo info;
  std::map<std::string, MatrixStats> matrices;

  // Mean squared activation per column (what quantize_row takes as importance).
  quantize::ImportanceMap importance() const;
};

// Collects sums of squared inputs for every matrix the forward pass multiplies.
class StatsCollector : public MatmulObserver {
 public:
  explicit StatsCollector(Stats& stats) : stats_(stats) {}
  void observe(const Matrix& w, const float* x, int64_t x_stride, int ncols) override;

 private:
  Stats& stats_;
};

void write_stats(const std::string& path, const Stats& stats);
// Reads a statistics file; every count, vector and number in it is checked
// (BRISK_ERR_BAD_FORMAT), but not against a model: see fit_stats_to_model.
Stats read_stats(const std::string& path);
// Checks statistics against the model they are about to be used with, before
// anything indexes a row with them: an entry for one of the model's matrices
// must have exactly its column count (else BRISK_ERR_INVALID_ARGUMENT naming
// both); entries for tensors the model lacks are dropped.
void fit_stats_to_model(Stats& stats, const gguf::File& model, const std::string& stats_path);

}  // namespace brisk::calib
