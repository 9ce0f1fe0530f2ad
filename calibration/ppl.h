// SPDX-License-Identifier: MIT
// Perplexity and, against a base model, KL divergence, with llama.cpp's
// llama-perplexity protocol by default:
//   the text is tokenized as one string with BOS; it is cut into
//   floor(n / n_ctx) chunks of n_ctx tokens; each chunk is evaluated from an
//   empty cache with its first token replaced by BOS; the NLL is averaged over
//   the predictions at positions n_ctx/2 .. n_ctx-2 (the second half).
// Options cover the stories260K reference protocol too: `prepend` chunking
// (text tokenized without BOS, chunks of n_ctx-1 tokens evaluated as
// [BOS] + chunk), scoring all predictions, and only the first N characters.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor_type.h"

#include "model/model.h"

namespace brisk::calib {

enum class ChunkMode { replace_bos, prepend_bos };
enum class ScoreMode { second_half, all };

struct PplOptions {
  int n_ctx = 256;
  int max_chunks = 0;  // 0: all
  bool spread_chunks = false;  // with max_chunks: evenly spaced chunks instead of the first ones
  // Base log-probabilities cache (like llama-perplexity --kl-divergence-base):
  // written when a base model is given, read instead of running one when not.
  std::string base_cache;
  ChunkMode chunking = ChunkMode::replace_bos;
  ScoreMode scoring = ScoreMode::second_half;
  int64_t max_chars = -1;  // < 0: whole text
  int n_threads = 0;
  // KV cache types of the evaluated model (the base model keeps its default,
  // so a KL against it measures what the cache type costs).
  std::optional<TensorType> cache_type_k, cache_type_v;
  bool keep_kld_values = false;  // keep per-position KL in the result
  // (chunks done, chunks total); return false to cancel (BRISK_ERR_CANCELLED).
  std::function<bool(uint64_t, uint64_t)> progress;
};

struct ValueWithError {
  double value = 0, error = 0;
};

struct PplResult {
  int n_ctx = 0;
  uint64_t n_text_tokens = 0;  // after tokenization (incl. BOS in replace mode)
  int n_chunks = 0;
  uint64_t n_scored = 0;
  std::vector<double> chunk_nll_sums;
  ValueWithError mean_nll, ppl;
  // With a base model:
  bool has_base = false;
  ValueWithError base_ppl;
  ValueWithError kld;            // mean KL(base || model) per scored position
  double kld_median = 0, kld_p99 = 0, kld_p999 = 0, kld_max = 0;
  ValueWithError same_top_pct;   // % of positions whose argmax equals the base's
  ValueWithError ln_ppl_ratio;   // mean of nll_model - nll_base
  ValueWithError delta_ppl;      // PPL(model) - PPL(base)
  std::vector<float> kld_values;  // if keep_kld_values
};

// base may be null (perplexity only). Both models must share the vocabulary.
PplResult perplexity(const Model& model, const Model* base, const std::string& text, const PplOptions& options);

// Evaluates already-made chunks; scoring starts at `first` (predictions at
// positions first..n-2 of each chunk). For callers that make their own chunks.
PplResult perplexity_chunks(const Model& model, const Model* base, const std::vector<std::vector<int32_t>>& chunks,
                            int first, const PplOptions& options);

// JSON text of a result (one object; stable keys, documented in docs/calibration.md).
std::string ppl_json(const PplResult& r, const std::string& model_path, const std::string& base_path,
                     const std::string& text_path, const PplOptions& o);

}  // namespace brisk::calib
