// SPDX-License-Identifier: MIT
// The "I16" form of packed F16/BF16 products (kernels/packed.h): the
// activation columns and the scalar gemm that defines, to the bit, what the
// .i16 kernels compute.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/packed.h"

namespace brisk::kernels {

size_t packed_i16_act_offset(int64_t k) { return (static_cast<size_t>(i16_blocks(k)) * 4 + 63) & ~size_t{63}; }
size_t packed_i16_act_bytes(int64_t k) {
  return packed_i16_act_offset(k) + static_cast<size_t>(i16_blocks(k)) * kI16Block * sizeof(int16_t);
}

namespace {

// v rounded to the nearest integer (ties to even) and saturated to int16, as
// vcvtps2dq then vpackssdw do (a NaN, from a NaN or an infinity in the
// input, becomes -32768 as there).
int16_t round_to_i16(float v) {
  if (std::isnan(v)) return INT16_MIN;
  const float r = std::nearbyint(v);
  return r >= 32767.0f ? int16_t{32767} : r <= -32768.0f ? int16_t{-32768} : static_cast<int16_t>(r);
}

template <TensorType T>
void gemm_packed_i16_ref(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride,
                         int ncols, float* out, size_t out_stride) {
  const int64_t nb = i16_blocks(k);
  for (int r = 0; r < nrows; ++r) {
    const uint8_t* group = static_cast<const uint8_t*>(w) + static_cast<size_t>(r / kPackRows) * w_stride;
    const int rr = r % kPackRows;
    for (int c = 0; c < ncols; ++c) {
      const auto* col = static_cast<const uint8_t*>(act) + static_cast<size_t>(c) * act_stride;
      const auto* xd = reinterpret_cast<const float*>(col);
      const auto* xq = reinterpret_cast<const int16_t*>(col + packed_i16_act_offset(k));
      float total = 0;
      for (int64_t b0 = 0; b0 < nb; b0 += kI16ChunkBlocks) {
        float chunk = 0;
        for (int64_t b = b0; b < std::min(nb, b0 + kI16ChunkBlocks); ++b) {
          const int64_t i0 = b * kI16Block, i1 = std::min(k, i0 + kI16Block);
          float m = 0;
          for (int64_t i = i0; i < i1; ++i) m = std::max(m, std::fabs(packed_float_value(T, group, rr, i)));
          const float inv = m > 0 ? kI16WeightMax / m : 0.0f;
          int64_t dot = 0;
          for (int64_t i = i0; i < i1; ++i) dot += round_to_i16(packed_float_value(T, group, rr, i) * inv) * xq[i];
          chunk = std::fma(static_cast<float>(dot), (m / kI16WeightMax) * xd[b], chunk);
        }
        total = b0 == 0 ? chunk : total + chunk;
      }
      out[static_cast<size_t>(c) * out_stride + static_cast<size_t>(r)] = total;
    }
  }
}

}  // namespace

void quantize_packed_i16_act_ref(const float* x, void* out, int64_t k) {
  auto* base = static_cast<uint8_t*>(out);
  auto* d = reinterpret_cast<float*>(base);
  auto* q = reinterpret_cast<int16_t*>(base + packed_i16_act_offset(k));
  for (int64_t b = 0; b < i16_blocks(k); ++b) {
    const int64_t i0 = b * kI16Block, n = std::min<int64_t>(kI16Block, k - i0);
    float m = 0;
    for (int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(x[i0 + i]));
    const float inv = m > 0 ? kI16ActMax / m : 0.0f;
    d[b] = m / kI16ActMax;
    for (int64_t i = 0; i < kI16Block; ++i) q[i0 + i] = i < n ? round_to_i16(x[i0 + i] * inv) : int16_t{0};
  }
}

void gemm_f16_packed_i16_ref(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride,
                             int ncols, float* out, size_t out_stride) {
  gemm_packed_i16_ref<TensorType::F16>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}
void gemm_bf16_packed_i16_ref(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
                              size_t act_stride, int ncols, float* out, size_t out_stride) {
  gemm_packed_i16_ref<TensorType::BF16>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}

}  // namespace brisk::kernels
