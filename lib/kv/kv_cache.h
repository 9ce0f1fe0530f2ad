// SPDX-License-Identifier: MIT
// Keys and values of every layer for a fixed number of sequence slots.
// Each (layer, slot, KV head) owns n_ctx consecutive rows of head_dim values
// stored in the cache type; a row is written once when its token is evaluated
// and read by every later token of the same slot. Head-major, because
// attention reads one head of one slot from position 0 on: a contiguous
// stream the hardware prefetcher follows (token-major rows made it a strided
// walk that waited on DRAM at every row).
#pragma once
#include <cstdint>
#include <memory>

#include "core/huge_pages.h"
#include "core/tensor_type.h"
#include "model/config.h"

namespace brisk {

class KVCache {
 public:
  // k_type / v_type: F32, F16 (kv_dim any), Q8_0 or Q4_0 (head_dim a multiple of 32).
  KVCache(const ModelConfig& config, int n_slots, int n_ctx, TensorType k_type, TensorType v_type);
  KVCache(const KVCache&) = delete;
  KVCache& operator=(const KVCache&) = delete;

  // Bytes one token takes in the cache over all layers, for memory planning.
  static uint64_t bytes_per_token(const ModelConfig& config, TensorType k_type, TensorType v_type);

  int n_slots() const { return n_slots_; }
  int n_ctx() const { return n_ctx_; }
  TensorType k_type() const { return k_type_; }
  TensorType v_type() const { return v_type_; }
  // Bytes of one head's row (head_dim values); rows of a head are this far apart.
  size_t k_head_row_bytes() const { return k_row_bytes_; }
  size_t v_head_row_bytes() const { return v_row_bytes_; }

  // Row `pos` of one KV head.
  const uint8_t* k_row(int layer, int slot, int head, int pos) const { return base(k_mem_.data(), k_row_bytes_, layer, slot, head, pos); }
  const uint8_t* v_row(int layer, int slot, int head, int pos) const { return base(v_mem_.data(), v_row_bytes_, layer, slot, head, pos); }

  // Writes one token's key and value (kv_dim floats each) in the cache types.
  void store(int layer, int slot, int pos, const float* k, const float* v);
  // Copies positions [0, n) of every layer from one slot to another (prefix sharing).
  void copy_prefix(int src_slot, int dst_slot, int n);

  uint64_t total_bytes() const;

 private:
  uint8_t* base(uint8_t* p, size_t row, int layer, int slot, int head, int pos) const {
    const size_t idx = ((static_cast<size_t>(layer) * n_slots_ + slot) * n_head_kv_ + head) * n_ctx_ + pos;
    return p + idx * row;
  }
  int n_layer_, n_slots_, n_ctx_, head_dim_, n_head_kv_;
  TensorType k_type_, v_type_;
  size_t k_row_bytes_, v_row_bytes_;
  HugePageBuffer k_mem_, v_mem_;
};

}  // namespace brisk
