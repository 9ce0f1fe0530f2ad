// SPDX-License-Identifier: MIT
// Scaled dot-product attention of every batch token over its own slot's
// cache. Causality comes from positions: a token at position p reads cache
// rows 0..p of its slot, which already hold this batch's earlier tokens of
// the same sequence.
//
// One task is one (token, KV head) pair: each cached key and value row is
// converted to floats once and used by all the query heads that share it
// (grouped-query attention), so a quantized cache costs one conversion per
// row, not one per query head. The kernel (kernels/vec.h, attend) is fused
// per ISA where that pays.
#include <cmath>

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
  const int64_t n_tasks = static_cast<int64_t>(b.size()) * c.n_head_kv;
  pool.parallel_for(n_tasks, [&](int64_t task, int thread) {
    const int t = static_cast<int>(task / c.n_head_kv);
    const int g = static_cast<int>(task % c.n_head_kv);
    const int slot = b.slot[t];
    kernels::AttendArgs a;
    a.q = &q_[static_cast<size_t>(t) * c.q_dim() + static_cast<size_t>(g) * group * hd];
    a.group = group;
    a.head_dim = hd;
    a.n_pos = b.pos[t] + 1;
    a.scale = scale;
    a.k = cache.k_row(l, slot, g, 0);
    a.k_stride = cache.k_head_row_bytes();
    a.k_type = cache.k_type();
    a.v = cache.v_row(l, slot, g, 0);
    a.v_stride = cache.v_head_row_bytes();
    a.v_type = cache.v_type();
    a.scores = &scores_[static_cast<size_t>(thread) * kernels::attend_scores_floats(group, n_ctx_)];
    a.row = &row_buf_[static_cast<size_t>(thread) * hd];
    a.v_rows = &v_rows_[static_cast<size_t>(thread) * n_ctx_ * hd];
    a.out = &att_[static_cast<size_t>(t) * c.q_dim() + static_cast<size_t>(g) * group * hd];
    kernels::attend(vk, a);
  });
}

}  // namespace brisk
