// SPDX-License-Identifier: MIT
// Evaluates independent chunks of tokens, each from a fresh KV cache, and
// exposes the logits of every position: what perplexity, KL divergence,
// calibration statistics and sensitivity measurement all need. A one-slot
// Engine (the same runtime and memory plan as sessions and engines) computing
// with a copy of the model's weight views, so single matrices can be pointed
// at other data (sensitivity measurement).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>

#include <vector>

#include "engine/engine.h"
#include "model/model.h"

namespace brisk::calib {

struct EvalOptions {
  int n_ctx = 256;
  int n_threads = 0;  // 0: one per physical core
  std::optional<TensorType> cache_type;    // unset: the session default for the model
  std::optional<TensorType> cache_type_v;  // values, if different from cache_type
  AbortCheck abort = nullptr;
  void* abort_ctx = nullptr;
  uint64_t memory_reserved = 0;  // planned for other evaluators of the same job
};

class Evaluator {
 public:
  Evaluator(const Model& model, const EvalOptions& options);
  // What the constructor would plan, or BRISK_ERR_OUT_OF_MEMORY with the
  // numbers: lets a job refuse before tokenizing its text.
  static MemoryPlan check_memory(const Model& model, const EvalOptions& options);

  // Evaluates tokens[0..n) at positions 0..n-1 (n <= n_ctx) and returns the
  // logits after each: n rows of n_vocab floats. Throws BRISK_ERR_CANCELLED
  // if the abort check fired.
  const float* run(const int32_t* tokens, int n);

  void set_observer(MatmulObserver* observer) { engine_->set_observer(observer); }
  // The weight views the forward pass reads; change a Matrix to swap it.
  Weights& weights() { return weights_; }
  const Model& model() const { return model_; }
  int n_ctx() const { return opt_.n_ctx; }
  int n_vocab() const { return model_.config().n_vocab; }
  ThreadPool& pool() { return engine_->pool(); }
  const MemoryPlan& memory_plan() const { return engine_->memory_plan(); }

 private:
  const Model& model_;
  EvalOptions opt_;
  Weights weights_;
  std::unique_ptr<Engine> engine_;  // after weights_, which it computes with
  Sequence* seq_ = nullptr;
  std::vector<float> rows_;  // n_ctx rows of logits
};

// Log-softmax of one row into out (n floats); returns nothing, out[i] = log p_i.
void log_softmax(const float* logits, int n, float* out);

}  // namespace brisk::calib
