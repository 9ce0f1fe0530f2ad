// SPDX-License-Identifier: MIT
// avx512 attention vector kernels (see kernels/vec.h): the width-generic ones
// of simd/vec_ops.h in 16 lanes, and SwiGLU, written here as it needs the
// masked tail and vscalefps-based exp512 that AVX2 lacks.
#include "kernels/avx512/simd_traits.h"
#include "kernels/simd/vec_ops.h"

namespace brisk::kernels {

namespace {

using avx512::Vec;

// silu(g) * u = g * u / (1 + e^-g).
void swiglu(float* gate, const float* up, int64_t n) {
  constexpr int W = Vec::kLanes;
  int64_t i = 0;
  const __m512 one = _mm512_set1_ps(1.0f);
  for (; i + W <= n; i += W) {
    const __m512 g = _mm512_loadu_ps(gate + i);
    const __m512 e = avx512::exp512(_mm512_sub_ps(_mm512_setzero_ps(), g));
    _mm512_storeu_ps(gate + i, _mm512_div_ps(_mm512_mul_ps(g, _mm512_loadu_ps(up + i)), _mm512_add_ps(one, e)));
  }
  if (i < n) {
    const __mmask16 m = avx512::lane_mask(n - i);
    const __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
    const __m512 e = avx512::exp512(_mm512_sub_ps(_mm512_setzero_ps(), g));
    _mm512_mask_storeu_ps(gate + i, m, _mm512_div_ps(_mm512_mul_ps(g, _mm512_maskz_loadu_ps(m, up + i)), _mm512_add_ps(one, e)));
  }
}

const VecKernels kTable{simd::to_f32<Vec>, simd::dot<Vec>,      simd::axpy<Vec>,    avx512::attend,
                        swiglu,            simd::from_f32<Vec>, simd::read_sum<Vec>,
                        simd::exp_sum<Vec>, simd::rmsnorm<Vec>};

}  // namespace

const VecKernels* avx512_vec_kernels() { return &kTable; }

}  // namespace brisk::kernels
