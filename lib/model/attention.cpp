// Scaled dot-product attention of every batch token over its own slot's
// cache, one (token, head) pair per task. Causality comes from positions: a
// token at position p reads cache rows 0..p of its slot, which already hold
// this batch's earlier tokens of the same sequence.
#include <cmath>

#include "kernels/ops.h"
#include "kv/kv_cache.h"
#include "model/forward.h"
#include "quant/quant.h"
#include "threads/thread_pool.h"

namespace brisk {

namespace {

// head_dim values of one KV head from a cache row, as floats.
inline const float* head_values(const uint8_t* row, TensorType type, int g, int head_dim, float* tmp) {
  if (type == TensorType::F32) return reinterpret_cast<const float*>(row) + static_cast<size_t>(g) * head_dim;
  const size_t offset = row_bytes(type, static_cast<int64_t>(g) * head_dim);
  quant::dequantize_row(type, row + offset, tmp, head_dim);
  return tmp;
}

}  // namespace

void Forward::attend(int l, const Batch& b, const KVCache& cache, ThreadPool& pool) {
  const ModelConfig& c = config_;
  const int hd = c.head_dim;
  const int group = c.n_head / c.n_head_kv;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const int64_t n_tasks = static_cast<int64_t>(b.size()) * c.n_head;
  const int thread_stride = n_ctx_;
  pool.parallel_for(n_tasks, [&](int64_t task, int thread) {
    const int t = static_cast<int>(task / c.n_head);
    const int h = static_cast<int>(task % c.n_head);
    const int g = h / group;
    const int slot = b.slot[t];
    const int n_pos = b.pos[t] + 1;
    const float* q = &q_[static_cast<size_t>(t) * c.q_dim() + static_cast<size_t>(h) * hd];
    float* s = &scores_[static_cast<size_t>(thread) * thread_stride];
    float tmp[512];  // head sizes above 512 are refused at load
    for (int p = 0; p < n_pos; ++p) {
      const float* k = head_values(cache.k_row(l, slot, p), cache.k_type(), g, hd, tmp);
      s[p] = ops::dot(q, k, hd) * scale;
    }
    ops::softmax(s, n_pos);
    float* out = &att_[static_cast<size_t>(t) * c.q_dim() + static_cast<size_t>(h) * hd];
    for (int i = 0; i < hd; ++i) out[i] = 0;
    for (int p = 0; p < n_pos; ++p) {
      const float* v = head_values(cache.v_row(l, slot, p), cache.v_type(), g, hd, tmp);
      const float w = s[p];
      for (int i = 0; i < hd; ++i) out[i] += w * v[i];
    }
  });
}

}  // namespace brisk
