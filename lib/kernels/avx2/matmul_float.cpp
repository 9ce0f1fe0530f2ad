// SPDX-License-Identifier: MIT
// AVX2 kernels for float weights (F32, F16, BF16) against F32 activations:
// simd/float_tiles.h in 8 lanes. With 16 ymm registers a 3 x 3 tile
// (9 accumulators + 3 activations + 1 weight) is the largest that does not
// spill.
#include "kernels/avx2/simd_traits.h"
#include "kernels/simd/float_tiles.h"

namespace brisk::kernels::avx2 {

void quantize_f32(const float* x, void* out, int64_t k) {
  std::memcpy(out, x, static_cast<size_t>(k) * sizeof(float));
}

void gemm_f32(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
              size_t act_stride, int ncols, float* out, size_t out_stride) {
  simd::gemm_float<Vec, simd::LoadF32, 3, 3>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}
void gemm_f16(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
              size_t act_stride, int ncols, float* out, size_t out_stride) {
  simd::gemm_float<Vec, simd::LoadF16, 3, 3>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}
void gemm_bf16(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
               size_t act_stride, int ncols, float* out, size_t out_stride) {
  simd::gemm_float<Vec, simd::LoadBF16, 3, 3>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}

}  // namespace brisk::kernels::avx2
