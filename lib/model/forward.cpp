// SPDX-License-Identifier: MIT
#include "model/forward.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "kernels/ops.h"
#include "kernels/vec.h"
#include "kv/kv_cache.h"
#include "quant/quant.h"
#include "threads/thread_pool.h"

namespace brisk {

Forward::Forward(const ModelConfig& c, const Weights& w, int max_tokens, int n_ctx, int n_threads)
    : config_(c), w_(w), max_tokens_(max_tokens), n_ctx_(n_ctx) {
  const size_t T = static_cast<size_t>(max_tokens);
  x_.resize(T * c.n_embd);
  xn_.resize(T * c.n_embd);
  q_.resize(T * c.q_dim());
  k_.resize(T * c.kv_dim());
  v_.resize(T * c.kv_dim());
  att_.resize(T * c.q_dim());
  tmp_.resize(T * c.n_embd);
  gate_.resize(T * c.n_ff);
  up_.resize(T * c.n_ff);
  rope_cs_.resize(T * c.rope_dim);
  scores_.resize(static_cast<size_t>(n_threads) * kernels::attend_scores_floats(c.n_head / c.n_head_kv, n_ctx));
  row_buf_.resize(static_cast<size_t>(n_threads) * c.head_dim);
  v_rows_.resize(static_cast<size_t>(n_threads) * n_ctx * c.head_dim);
  logits_.resize(T * c.n_vocab);
  // theta_i = base^(-2i/d), in double so long contexts keep their precision.
  inv_freq_.resize(c.rope_dim / 2);
  for (int i = 0; i < c.rope_dim / 2; ++i) {
    double f = std::pow(static_cast<double>(c.rope_freq_base), -2.0 * i / c.rope_dim);
    if (!w.rope_freq_factors.empty()) f /= w.rope_freq_factors[i];
    inv_freq_[i] = static_cast<float>(f);
  }
}

uint64_t Forward::scratch_bytes(const ModelConfig& c, int max_tokens, int n_ctx, int n_threads) {
  const uint64_t T = static_cast<uint64_t>(max_tokens), th = static_cast<uint64_t>(n_threads);
  // x, xn, tmp; q, att; k, v; gate, up; rope (cos, sin).
  const uint64_t per_token = 3ull * c.n_embd + 2ull * c.q_dim() + 2ull * c.kv_dim() + 2ull * c.n_ff + c.rope_dim;
  const uint64_t per_thread = kernels::attend_scores_floats(c.n_head / c.n_head_kv, n_ctx) +
                              static_cast<uint64_t>(c.head_dim) + static_cast<uint64_t>(n_ctx) * c.head_dim;
  // MatmulOp keeps up to three converted copies of an input (at most 2 bytes
  // an element, F16; quantized formats take about 1).
  const uint64_t acts = 3ull * T * static_cast<uint64_t>(std::max(c.n_embd, c.n_ff)) * 2ull;
  return 4ull * (T * per_token + th * per_thread) + acts;
}

void Forward::embed(const Batch& b) {
  const Matrix& e = w_.token_embd;
  for (int t = 0; t < b.size(); ++t) {
    const int32_t tok = b.tokens[t];
    if (tok < 0 || tok >= e.rows)
      fail(BRISK_ERR_INVALID_ARGUMENT, "token id " + std::to_string(tok) + " is outside the vocabulary (0.." +
                                           std::to_string(e.rows - 1) + ")");
    quant::dequantize_row(e.type, e.row(tok), &x_[static_cast<size_t>(t) * config_.n_embd], config_.n_embd);
  }
}

void Forward::rope_tables(const Batch& b) {
  const int half = config_.rope_dim / 2;
  for (int t = 0; t < b.size(); ++t) {
    const double p = static_cast<double>(b.pos[t]) * config_.rope_freq_scale;
    float* cs = &rope_cs_[static_cast<size_t>(t) * config_.rope_dim];
    for (int i = 0; i < half; ++i) {
      const double theta = p * inv_freq_[i];
      cs[2 * i] = static_cast<float>(std::cos(theta));
      cs[2 * i + 1] = static_cast<float>(std::sin(theta));
    }
  }
}

bool Forward::run(const Batch& b, KVCache& cache, ThreadPool& pool, AbortCheck abort, void* abort_ctx) {
  const int n = b.size();
  if (n == 0) return true;
  if (n > max_tokens_) fail(BRISK_ERR_INTERNAL, "batch larger than the forward pass was sized for");
  const ModelConfig& c = config_;
  embed(b);
  rope_tables(b);
  for (int l = 0; l < c.n_layer; ++l) {
    if (abort && abort(abort_ctx)) return false;
    const LayerWeights& L = w_.layers[l];
    // x += attention(norm(x))
    norm(n, pool, L.attn_norm.data());
    attention_block(l, b, cache, pool);
    residual(n, pool);
    // x += feed_forward(norm(x))
    norm(n, pool, L.ffn_norm.data());
    feed_forward_block(l, n, pool);
    residual(n, pool);
  }
  output(b, pool);
  return true;
}

template <class F>
void Forward::for_each_token(int n, ThreadPool& pool, F&& f) {
  // From prompt-sized batches on, the calling thread would otherwise work
  // alone while the others wait. Below that (decode of up to a few dozen
  // sequences) these steps are short next to the matmuls, and a pass of
  // their own would end the workers' read-ahead of the next weights
  // (ThreadPool::read_ahead_after_next_run).
  constexpr int kParallelTokens = 32;
  if (n < kParallelTokens || pool.size() == 1) {
    for (int t = 0; t < n; ++t) f(t);
    return;
  }
  // A few chunks per thread, so a thread slowed by another process takes fewer.
  const int chunk = std::max(1, n / (4 * pool.size()));
  pool.parallel_for((n + chunk - 1) / chunk, [&](int64_t i, int) {
    const int t1 = std::min(n, static_cast<int>(i + 1) * chunk);
    for (int t = static_cast<int>(i) * chunk; t < t1; ++t) f(t);
  });
}

void Forward::norm(int n, ThreadPool& pool, const float* weight) {
  const ModelConfig& c = config_;
  const kernels::VecKernels& vk = kernels::vec_kernels();
  for_each_token(n, pool, [&](int t) {
    const size_t at = static_cast<size_t>(t) * c.n_embd;
    vk.rmsnorm(&xn_[at], &x_[at], weight, c.n_embd, c.rms_eps);
  });
  mm_.invalidate();
}

void Forward::residual(int n, ThreadPool& pool) {
  const int d = config_.n_embd;
  for_each_token(n, pool, [&](int t) {
    ops::add(&x_[static_cast<size_t>(t) * d], &tmp_[static_cast<size_t>(t) * d], d);
  });
}

void Forward::attention_block(int l, const Batch& b, KVCache& cache, ThreadPool& pool) {
  const ModelConfig& c = config_;
  const LayerWeights& L = w_.layers[l];
  const int n = b.size();
  mm_.run(pool, {{&L.wq, q_.data(), c.q_dim()}, {&L.wk, k_.data(), c.kv_dim()}, {&L.wv, v_.data(), c.kv_dim()}},
          xn_.data(), c.n_embd, n, {&L.wo});
  // Distinct tokens write distinct cache rows, so tokens can go in parallel.
  for_each_token(n, pool, [&](int t) {
    float* q = &q_[static_cast<size_t>(t) * c.q_dim()];
    float* k = &k_[static_cast<size_t>(t) * c.kv_dim()];
    float* v = &v_[static_cast<size_t>(t) * c.kv_dim()];
    if (c.has_qkv_bias) {
      ops::add(q, L.bq.data(), c.q_dim());
      ops::add(k, L.bk.data(), c.kv_dim());
      ops::add(v, L.bv.data(), c.kv_dim());
    }
    const float* cs = &rope_cs_[static_cast<size_t>(t) * c.rope_dim];
    ops::rope(q, c.n_head, c.head_dim, c.rope_dim, cs, c.rope_neox);
    ops::rope(k, c.n_head_kv, c.head_dim, c.rope_dim, cs, c.rope_neox);
    cache.store(l, b.slot[t], b.pos[t], k, v);
  });
  attend(l, b, cache, pool);
  mm_.invalidate();
  mm_.run(pool, L.wo, att_.data(), c.q_dim(), n, tmp_.data(), c.n_embd, {&L.w_gate, &L.w_up});
}

void Forward::feed_forward_block(int l, int n, ThreadPool& pool) {
  const ModelConfig& c = config_;
  const LayerWeights& L = w_.layers[l];
  mm_.run(pool, {{&L.w_gate, gate_.data(), c.n_ff}, {&L.w_up, up_.data(), c.n_ff}}, xn_.data(), c.n_embd, n,
          {&L.w_down});
  const kernels::VecKernels& vk = kernels::vec_kernels();
  for_each_token(n, pool, [&](int t) {
    vk.swiglu(&gate_[static_cast<size_t>(t) * c.n_ff], &up_[static_cast<size_t>(t) * c.n_ff], c.n_ff);
  });
  mm_.invalidate();
  // The next pass reads the next layer's Q/K/V, or the output matrix.
  if (l + 1 < c.n_layer) {
    const LayerWeights& N = w_.layers[l + 1];
    mm_.run(pool, L.w_down, gate_.data(), c.n_ff, n, tmp_.data(), c.n_embd, {&N.wq, &N.wk, &N.wv});
  } else {
    mm_.run(pool, L.w_down, gate_.data(), c.n_ff, n, tmp_.data(), c.n_embd, {&w_.output});
  }
}

void Forward::output(const Batch& b, ThreadPool& pool) {
  const ModelConfig& c = config_;
  // Gather the rows that want logits, normalised, into xn_.
  int m = 0;
  for (int t = 0; t < b.size(); ++t) {
    if (!b.want_logits[t]) continue;
    kernels::vec_kernels().rmsnorm(&xn_[static_cast<size_t>(m) * c.n_embd], &x_[static_cast<size_t>(t) * c.n_embd],
                                   w_.output_norm.data(), c.n_embd, c.rms_eps);
    ++m;
  }
  if (m == 0) return;
  mm_.invalidate();
  mm_.run(pool, w_.output, xn_.data(), c.n_embd, m, logits_.data(), c.n_vocab);
}

}  // namespace brisk
