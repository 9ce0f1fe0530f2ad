// Scaled dot-product attention of every batch token over its own slot's
// cache. Causality comes from positions: a token at position p reads cache
// rows 0..p of its slot, which already hold this batch's earlier tokens of
// the same sequence.
//
// One task is one (token, KV head) pair: each cached key and value row is
// converted to floats once and used by all the query heads that share it
// (grouped-query attention), so a quantized cache costs one conversion per
// row, not one per query head.
#include <cmath>

#include "kernels/ops.h"
#include "kernels/vec.h"
#include "kv/kv_cache.h"
#include "model/forward.h"
#include "threads/thread_pool.h"

namespace brisk {

void Forward::attend(int l, const Batch& b, const KVCache& cache, ThreadPool& pool) {
  const ModelConfig& c = config_;
  const int hd = c.head_dim;
  const int group = c.n_head / c.n_head_kv;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const kernels::VecKernels& vk = kernels::vec_kernels();
  const size_t k_head_bytes = row_bytes(cache.k_type(), hd);
  const size_t v_head_bytes = row_bytes(cache.v_type(), hd);
  const int64_t n_tasks = static_cast<int64_t>(b.size()) * c.n_head_kv;
  pool.parallel_for(n_tasks, [&](int64_t task, int thread) {
    const int t = static_cast<int>(task / c.n_head_kv);
    const int g = static_cast<int>(task % c.n_head_kv);
    const int slot = b.slot[t];
    const int n_pos = b.pos[t] + 1;
    float* scores = &scores_[static_cast<size_t>(thread) * group * n_ctx_];  // [group][n_ctx]
    float* row = &row_buf_[static_cast<size_t>(thread) * hd];
    const float* q0 = &q_[static_cast<size_t>(t) * c.q_dim() + static_cast<size_t>(g) * group * hd];
    for (int p = 0; p < n_pos; ++p) {
      vk.to_f32(cache.k_type(), cache.k_row(l, slot, p) + g * k_head_bytes, row, hd);
      for (int h = 0; h < group; ++h) scores[h * n_ctx_ + p] = vk.dot(q0 + h * hd, row, hd) * scale;
    }
    float* out0 = &att_[static_cast<size_t>(t) * c.q_dim() + static_cast<size_t>(g) * group * hd];
    for (int h = 0; h < group; ++h) {
      ops::softmax(scores + h * n_ctx_, n_pos);
      for (int i = 0; i < hd; ++i) out0[h * hd + i] = 0;
    }
    for (int p = 0; p < n_pos; ++p) {
      vk.to_f32(cache.v_type(), cache.v_row(l, slot, p) + g * v_head_bytes, row, hd);
      for (int h = 0; h < group; ++h) vk.axpy(out0 + h * hd, scores[h * n_ctx_ + p], row, hd);
    }
  });
}

}  // namespace brisk
