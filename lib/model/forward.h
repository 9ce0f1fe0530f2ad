// SPDX-License-Identifier: MIT
// The forward pass of a llama-family transformer over a Batch.
//
//   x = embed(tokens)
//   for each layer:  x += attention(norm(x));  x += feed_forward(norm(x))
//   logits = output(norm(x))        (only for tokens that want logits)
//
// A Forward owns the scratch memory for batches of up to max_tokens tokens,
// so no step allocates. It is used by one thread at a time (the pool does the
// parallel work inside).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "model/batch.h"
#include "model/config.h"
#include "model/matmul_op.h"
#include "model/weights.h"

namespace brisk {

class KVCache;
class ThreadPool;

using AbortCheck = bool (*)(void* ctx);

class Forward {
 public:
  Forward(const ModelConfig& config, const Weights& weights, int max_tokens, int n_ctx, int n_threads);
  // Bytes the constructor's scratch (logits excluded: max_tokens * n_vocab
  // floats) and the converted activations of its matmuls can come to: the
  // memory plan's figure, kept next to the allocations it counts.
  static uint64_t scratch_bytes(const ModelConfig& config, int max_tokens, int n_ctx, int n_threads);

  // Evaluates the batch, writing its keys and values into the cache, and
  // stores logits for the tokens with want_logits set, in batch order:
  // logits() row i belongs to the i-th such token. Returns false if `abort`
  // asked to stop (checked between layers); the cache then holds a partial
  // state for these positions, which later writes overwrite.
  bool run(const Batch& batch, KVCache& cache, ThreadPool& pool, AbortCheck abort = nullptr,
           void* abort_ctx = nullptr);

  // Every matmul's input is shown to the observer (nullptr: none).
  void set_observer(MatmulObserver* observer) { mm_.set_observer(observer); }

  const float* logits(int i) const { return logits_.data() + static_cast<size_t>(i) * config_.n_vocab; }
  int max_tokens() const { return max_tokens_; }

 private:
  void embed(const Batch& b);
  // f(t) for each of the batch's n tokens: inline for a few, else over the pool.
  template <class F>
  void for_each_token(int n, ThreadPool& pool, F&& f);
  void norm(int n, ThreadPool& pool, const float* weight);  // xn = rmsnorm(x) * weight
  void residual(int n, ThreadPool& pool);                   // x += tmp
  void attention_block(int layer, const Batch& b, KVCache& cache, ThreadPool& pool);
  void attend(int layer, const Batch& b, const KVCache& cache, ThreadPool& pool);
  void feed_forward_block(int layer, int n, ThreadPool& pool);
  void output(const Batch& b, ThreadPool& pool);
  void rope_tables(const Batch& b);

  const ModelConfig& config_;
  const Weights& w_;
  int max_tokens_;
  int n_ctx_;
  MatmulOp mm_;
  // Scratch sized for the largest batch but left uninitialised, so only the
  // pages a step actually writes become resident: generating one token at a
  // time does not pay resident memory for a 512-token prompt batch it never
  // ran (logits alone would be 512 x vocab floats).
  class Scratch {
   public:
    void resize(size_t n) { p_.reset(new float[n]); }  // default-init: pages untouched
    float* data() { return p_.get(); }
    const float* data() const { return p_.get(); }
    float& operator[](size_t i) { return p_[i]; }
    const float& operator[](size_t i) const { return p_[i]; }

   private:
    std::unique_ptr<float[]> p_;
  };
  // One row per batch token.
  Scratch x_, xn_, q_, k_, v_, att_, tmp_, gate_, up_;
  Scratch rope_cs_;  // (cos, sin) per token per frequency
  Scratch scores_;   // per thread: attention weights, [group][n_ctx]
  Scratch row_buf_;  // per thread: one cache row as floats
  Scratch v_rows_;   // per thread: a head's value rows as floats, [n_ctx][head_dim]
  Scratch logits_;
  std::vector<float> inv_freq_;  // per frequency pair
};

}  // namespace brisk
