// SPDX-License-Identifier: MIT
#include "kv/kv_cache.h"

#include <cstring>

#include "core/error.h"
#include "core/huge_pages.h"
#include "kernels/vec.h"
#include "quant/quant.h"
#include "threads/topology.h"

namespace brisk {

namespace {

void check_type(TensorType t, const ModelConfig& c) {
  switch (t) {
    case TensorType::F32:
    case TensorType::F16: return;
    case TensorType::Q8_0:
    case TensorType::Q4_0:
      // Blocks must not straddle heads: attention reads one head at a time.
      if (c.head_dim % 32 != 0)
        fail(BRISK_ERR_UNSUPPORTED, std::string("KV cache type ") + type_name(t) + " needs a head size that is a "
                                    "multiple of 32; this model's is " + std::to_string(c.head_dim));
      return;
    default:
      fail(BRISK_ERR_INVALID_ARGUMENT,
           std::string("KV cache type ") + type_name(t) + " is not supported (f32, f16, q8_0, q4_0)");
  }
}

// On huge pages: attention reads each head's rows as a short stream, long
// after the weights evicted them, and with 4 KB pages every few rows would
// cost a TLB miss as well. The pages are touched here (zeros), so the memory
// is counted and placed at creation, not during decoding.
HugePageBuffer alloc_zeroed(size_t bytes, const char* what) {
  HugePageBuffer b(bytes, what);
  if (b.data()) {
    interleave_across_numa_nodes(b.data(), b.size());  // before the first touch
    std::memset(b.data(), 0, b.size());
  }
  return b;
}

}  // namespace

KVCache::KVCache(const ModelConfig& c, int n_slots, int n_ctx, TensorType k_type, TensorType v_type)
    : n_layer_(c.n_layer),
      n_slots_(n_slots),
      n_ctx_(n_ctx),
      head_dim_(c.head_dim),
      n_head_kv_(c.n_head_kv),
      k_type_(k_type),
      v_type_(v_type) {
  check_type(k_type, c);
  check_type(v_type, c);
  if (n_slots <= 0 || n_ctx <= 0) fail(BRISK_ERR_INVALID_ARGUMENT, "KV cache needs at least one slot and one position");
  k_row_bytes_ = row_bytes(k_type, head_dim_);
  v_row_bytes_ = row_bytes(v_type, head_dim_);
  const size_t rows = static_cast<size_t>(n_layer_) * n_slots_ * n_head_kv_ * n_ctx_;
  k_mem_ = alloc_zeroed(rows * k_row_bytes_, "the KV cache's keys");
  v_mem_ = alloc_zeroed(rows * v_row_bytes_, "the KV cache's values");
}

uint64_t KVCache::bytes_per_token(const ModelConfig& c, TensorType k_type, TensorType v_type) {
  return static_cast<uint64_t>(c.n_layer) * c.n_head_kv *
         (row_bytes(k_type, c.head_dim) + row_bytes(v_type, c.head_dim));
}

uint64_t KVCache::total_bytes() const {
  return static_cast<uint64_t>(n_layer_) * n_slots_ * n_head_kv_ * n_ctx_ * (k_row_bytes_ + v_row_bytes_);
}

void KVCache::store(int layer, int slot, int pos, const float* k, const float* v) {
  const kernels::VecKernels& vk = kernels::vec_kernels();
  for (int h = 0; h < n_head_kv_; ++h) {
    const size_t off = static_cast<size_t>(h) * head_dim_;
    vk.from_f32(k_type_, k + off, base(k_mem_.data(), k_row_bytes_, layer, slot, h, pos), head_dim_);
    vk.from_f32(v_type_, v + off, base(v_mem_.data(), v_row_bytes_, layer, slot, h, pos), head_dim_);
  }
}

void KVCache::copy_prefix(int src, int dst, int n) {
  if (src == dst || n <= 0) return;
  for (int l = 0; l < n_layer_; ++l)
    for (int h = 0; h < n_head_kv_; ++h) {
      std::memcpy(base(k_mem_.data(), k_row_bytes_, l, dst, h, 0), base(k_mem_.data(), k_row_bytes_, l, src, h, 0),
                  static_cast<size_t>(n) * k_row_bytes_);
      std::memcpy(base(v_mem_.data(), v_row_bytes_, l, dst, h, 0), base(v_mem_.data(), v_row_bytes_, l, src, h, 0),
                  static_cast<size_t>(n) * v_row_bytes_);
    }
}

}  // namespace brisk
