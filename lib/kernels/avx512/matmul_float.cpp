// SPDX-License-Identifier: MIT
// AVX-512 kernels for float weights (F32, F16, BF16) against F32 activations:
// simd/float_tiles.h in 16 lanes. A 4 x 4 tile gives 16 independent
// accumulators, enough to hide FMA latency and to use each loaded weight
// vector four times.
#include "kernels/avx512/simd_traits.h"
#include "kernels/simd/float_tiles.h"

namespace brisk::kernels::avx512 {

void quantize_f32(const float* x, void* out, int64_t k) {
  std::memcpy(out, x, static_cast<size_t>(k) * sizeof(float));
}

void gemm_f32(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
              size_t act_stride, int ncols, float* out, size_t out_stride) {
  simd::gemm_float<Vec, simd::LoadF32, 4, 4>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}
void gemm_f16(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
              size_t act_stride, int ncols, float* out, size_t out_stride) {
  simd::gemm_float<Vec, simd::LoadF16, 4, 4>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}
void gemm_bf16(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
               size_t act_stride, int ncols, float* out, size_t out_stride) {
  simd::gemm_float<Vec, simd::LoadBF16, 4, 4>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}

}  // namespace brisk::kernels::avx512
