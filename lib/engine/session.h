// One sequence over a shared model: its KV cache, position, scratch and
// threads. Used by one thread at a time.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor_type.h"
#include "engine/common.h"
#include "kv/kv_cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "sample/sampler.h"
#include "threads/thread_pool.h"

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
  const std::vector<float>& logits() const { return last_logits_; }
  void reset();
  // Forgets tokens from position n on; logits must be recomputed by eval().
  void truncate(int n);

  // Called per generated token with its complete UTF-8 text; return false to stop.
  using TokenCallback = std::function<bool(int32_t token, const std::string& text)>;
  // Samples and evaluates up to max_tokens tokens after the current context.
  StopReason generate(Sampler& sampler, int max_tokens, bool stop_at_eos, const TokenCallback& on_token,
                      size_t* n_generated);

  int position() const { return pos_; }
  int n_ctx() const { return n_ctx_; }
  const Model& model() const { return model_; }
  const ThreadPool& pool() const { return pool_; }

 private:
  friend struct SeqStateAccess;  // engine/seq_state.cpp saves and restores it
  const Model& model_;
  SessionOptions opt_;
  int n_ctx_;
  ThreadPool pool_;
  KVCache cache_;
  Forward fwd_;
  Batch batch_;
  int pos_ = 0;
  int32_t last_token_ = -1;  // the most recently evaluated token
  std::vector<float> last_logits_;
};

}  // namespace brisk
