// SPDX-License-Identifier: MIT
// The AVX2 activation encoders: simd/quantize_act.h with this folder's
// vector traits and flags.
#include "kernels/avx2/simd_traits.h"
#include "kernels/simd/quantize_act.h"

namespace brisk::kernels::avx2 {

void quantize_q8_0(const float* x, void* out, int64_t k) { simd::quantize_q8_0<Vec>(x, out, k); }
void quantize_q8_1(const float* x, void* out, int64_t k) { simd::quantize_q8_1<Vec>(x, out, k); }
void quantize_q8_0_sums(const float* x, void* out, int64_t k) { simd::quantize_q8_0_sums<Vec>(x, out, k); }
void quantize_q8_k(const float* x, void* out, int64_t k) { simd::quantize_q8_k<Vec>(x, out, k); }

}  // namespace brisk::kernels::avx2
