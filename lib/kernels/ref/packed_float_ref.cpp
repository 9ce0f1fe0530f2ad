// SPDX-License-Identifier: MIT
// The packed layout of F16 and BF16 weights (kernels/packed.h): packing,
// unpacking, the "F32 + BF16" activation columns and the scalar gemms that
// define what the SIMD kernels compute on either side of
// kPackedFloatBatchCols.
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "kernels/packed.h"

namespace brisk::kernels {

bool packed_float_type(TensorType t) { return t == TensorType::F16 || t == TensorType::BF16; }

size_t packed_float_act_offset(int64_t k) { return (static_cast<size_t>(k) * 4 + 63) & ~size_t{63}; }
size_t packed_float_act_bytes(int64_t k) {
  return packed_float_act_offset(k) + ((static_cast<size_t>(k) * 2 + 63) & ~size_t{63});
}

uint16_t bf16_batch_round(float x) {
  // As vcvtneps2bf16: round to nearest even, subnormal inputs read as zero.
  if (std::fpclassify(x) == FP_SUBNORMAL) x = std::signbit(x) ? -0.0f : 0.0f;
  return f32_to_bf16(x);
}

void quantize_packed_float_act_ref(const float* x, void* out, int64_t k) {
  auto* base = static_cast<uint8_t*>(out);
  std::memcpy(base, x, static_cast<size_t>(k) * sizeof(float));
  auto* h = reinterpret_cast<uint16_t*>(base + packed_float_act_offset(k));
  for (int64_t i = 0; i < k; ++i) h[i] = bf16_batch_round(x[i]);
}

void pack_float_row_group(const uint8_t* rows, size_t row_stride, int nrows, int64_t k, uint8_t* group) {
  // Pair p (values 2p, 2p + 1: 4 bytes) of row r at byte 64p + 4r; rows past
  // nrows are 0. Line by line, so each 64-byte line is written once.
  const size_t pad = 4 * static_cast<size_t>(kPackRows - nrows);
  for (int64_t p = 0; p < k / 2; ++p) {
    uint8_t* line = group + 64 * static_cast<size_t>(p);
    const uint8_t* src = rows + 4 * static_cast<size_t>(p);
    for (int r = 0; r < nrows; ++r) std::memcpy(line + 4 * r, src + static_cast<size_t>(r) * row_stride, 4);
    if (pad) std::memset(line + 4 * nrows, 0, pad);
  }
}

void unpack_float_row_group(const uint8_t* group, int nrows, int64_t k, uint8_t* rows, size_t row_stride) {
  for (int r = 0; r < nrows; ++r) {
    uint8_t* row = rows + static_cast<size_t>(r) * row_stride;
    for (int64_t i = 0; i < k; ++i)
      std::memcpy(row + 2 * i, group + 64 * static_cast<size_t>(i / 2) + 4 * r + 2 * (i % 2), 2);
  }
}

float packed_float_value(TensorType t, const uint8_t* group, int r, int64_t i) {
  uint16_t h;
  std::memcpy(&h, group + 64 * static_cast<size_t>(i / 2) + 4 * r + 2 * (i % 2), 2);
  return t == TensorType::F16 ? fp16_to_f32(h) : bf16_to_f32(h);
}

namespace {

template <TensorType T>
void gemm_packed_float_ref(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
                           size_t act_stride, int ncols, float* out, size_t out_stride) {
  const bool batch = ncols >= kPackedFloatBatchCols;
  for (int c = 0; c < ncols; ++c) {
    const auto* col = static_cast<const uint8_t*>(act) + static_cast<size_t>(c) * act_stride;
    const auto* xf = reinterpret_cast<const float*>(col);
    const auto* xh = reinterpret_cast<const uint16_t*>(col + packed_float_act_offset(k));
    for (int r = 0; r < nrows; ++r) {
      const uint8_t* group = static_cast<const uint8_t*>(w) + static_cast<size_t>(r / kPackRows) * w_stride;
      const int rr = r % kPackRows;
      float sum = 0;
      for (int64_t i = 0; i < k; ++i) {
        const float wv = packed_float_value(T, group, rr, i);
        sum += batch ? bf16_to_f32(bf16_batch_round(wv)) * bf16_to_f32(xh[i]) : wv * xf[i];
      }
      out[static_cast<size_t>(c) * out_stride + static_cast<size_t>(r)] = sum;
    }
  }
}

}  // namespace

void gemm_f16_packed_ref(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride,
                         int ncols, float* out, size_t out_stride) {
  gemm_packed_float_ref<TensorType::F16>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}
void gemm_bf16_packed_ref(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride,
                          int ncols, float* out, size_t out_stride) {
  gemm_packed_float_ref<TensorType::BF16>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}

}  // namespace brisk::kernels
