// SPDX-License-Identifier: MIT
// One sequence over a shared model, as the C API's brisk_session offers it:
// a one-slot Engine with a persistent sequence. Evaluation, generation
// (sampling, stopping, UTF-8 streaming, callbacks, penalties, limits) and the
// memory plan are the Engine's, so a session and a one-sequence engine give
// the same tokens and text. Used by one thread at a time.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor_type.h"
#include "engine/engine.h"
#include "sample/sampler.h"

namespace brisk {

struct SessionOptions {
  int n_ctx = 0;      // 0: the model's training context, at most 4096
  int n_threads = 0;  // 0: physical cores
  int n_batch = 512;  // tokens per forward pass while reading a prompt
  // KV cache types; unset: F32 for a model whose matrices are all F32 (so it
  // computes exactly what the float reference does), F16 otherwise.
  std::optional<TensorType> k_type, v_type;
  bool pin_threads = true;
  bool pin_caller = false;  // also pin the constructing thread (thread 0)
  AbortCheck abort = nullptr;
  void* abort_ctx = nullptr;
  uint64_t memory_budget = 0;  // 0: the machine's available memory
};

class Session {
 public:
  Session(const Model& model, const SessionOptions& options);

  // Appends and evaluates tokens. If all_logits is non-null it receives
  // n * n_vocab floats (the logits after each token). Throws
  // BRISK_ERR_CONTEXT_FULL before evaluating anything if they do not fit,
  // BRISK_ERR_CANCELLED if the abort check fired (the position is then
  // unchanged: the partial tokens are forgotten).
  void eval(const int32_t* tokens, size_t n, float* all_logits = nullptr);
  const std::vector<float>& logits() const { return seq_->logits(); }
  void reset() { truncate(0); }
  // Forgets tokens from position n on; logits must be recomputed by eval().
  void truncate(int n) { seq_->truncate(n); }

  // Called per generated token with its complete UTF-8 text; return false to stop.
  using TokenCallback = Sequence::TokenCallback;
  // Samples and evaluates up to max_tokens tokens after the current context.
  // Afterwards the context holds the generated tokens, the last one
  // included when max_tokens was reached (a later generate continues the
  // text); a token the callback refused, or one past a full context, is not.
  StopReason generate(Sampler& sampler, int max_tokens, bool stop_at_eos, const TokenCallback& on_token,
                      size_t* n_generated);

  int position() const { return seq_->position(); }
  int n_ctx() const { return engine_.n_ctx(); }
  const Model& model() const { return engine_.model(); }
  const ThreadPool& pool() const { return engine_.pool(); }
  Engine& engine() { return engine_; }

 private:
  friend struct SeqStateAccess;  // engine/seq_state.cpp saves and restores it
  Engine engine_;
  Sequence* seq_;
};

}  // namespace brisk
