// SPDX-License-Identifier: MIT
// The AVX-512 vector: 16 float lanes in a zmm, as the operations the
// width-generic kernels of kernels/simd/ are written in. Included only by
// files under avx512/ (and amx/), so every template instantiated with it is
// compiled with those flags; it lives in an anonymous namespace, like those
// templates, so nothing here has external linkage (common.h: ODR).
#pragma once
#include "kernels/avx512/common.h"

namespace brisk::kernels::avx512 {
namespace {

struct Vec {
  static constexpr int kLanes = 16;
  using F = __m512;   // kLanes floats
  using I = __m512i;  // the same bits as integers
  using Mask = __mmask16;  // lanes [0, n) of a tail

  static F zero() { return _mm512_setzero_ps(); }
  static F set1(float x) { return _mm512_set1_ps(x); }
  static F load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, F v) { _mm512_storeu_ps(p, v); }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F fmadd(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static float hsum(F v) { return avx512::hsum(v); }
  // Eight double partial sums (rmsnorm): D8 lane j is partial j.
  using D8 = __m512d;
  static D8 zero_d8() { return _mm512_setzero_pd(); }
  // d + x[j]^2 per lane j, x[0..8) widened to double (its square is exact
  // there, so a fused and an unfused add give the same sum).
  static D8 add_squares8(D8 d, const float* x) {
    const __m512d v = _mm512_cvtps_pd(_mm256_loadu_ps(x));
    return _mm512_fmadd_pd(v, v, d);
  }
  static void store_d8(double* p, D8 d) { _mm512_storeu_pd(p, d); }

  // Aligned (the repacked activations of simd/q_tiles.h).
  static F load_aligned(const float* p) { return _mm512_load_ps(p); }
  static I load_i_aligned(const void* p) { return _mm512_load_si512(p); }

  static Mask tail_mask(int64_t n) { return lane_mask(n); }
  // Lanes past the mask read as 0 and touch no memory.
  static F load_tail(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }

  // kLanes fp16 / bf16 values as floats (exact); the tails read the masked
  // lanes only.
  static F load_f16(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static F load_f16_tail(const uint16_t* p, int64_t, Mask m) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p)); }
  // bf16 is the top half of an f32: zero-extend and shift.
  static F widen_bf16(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }
  static F load_bf16(const uint16_t* p) { return widen_bf16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static F load_bf16_tail(const uint16_t* p, int64_t, Mask m) { return widen_bf16(_mm256_maskz_loadu_epi16(m, p)); }
  // kLanes floats to fp16, round to nearest even (bit-exact with core/fp16.h).
  static void store_f16(uint16_t* p, F v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  // kLanes int8 as floats.
  static F load_i8(const int8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  static float h2f(uint16_t h) { return avx512::h2f(h); }
  static uint16_t f2h(float f) { return avx512::f2h(f); }

  // 64-bit integer lanes (read_sum).
  static I zero_i() { return _mm512_setzero_si512(); }
  static I load_i(const uint8_t* p) { return _mm512_loadu_si512(p); }
  static I add_u64(I a, I b) { return _mm512_add_epi64(a, b); }
  static uint64_t hsum_u64(I v) { return _mm512_reduce_add_epi64(v); }

  // The 32-weight block tiles (simd/q_tiles.h): blocks per vector, one per
  // 128-bit lane.
  static constexpr int kQBlocks = 4;
  static F cvt_i32(I v) { return _mm512_cvtepi32_ps(v); }
  static F cast_f(I v) { return _mm512_castsi512_ps(v); }
  static void* scratch(size_t bytes) { return kernels::scratch(bytes); }

  // Attention (simd/attend.h).
  static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static F div(F a, F b) { return _mm512_div_ps(a, b); }
  static F max(F a, F b) { return _mm512_max_ps(a, b); }
  // The masked lanes of p, fill elsewhere.
  static F load_tail_or(const float* p, Mask m, F fill) { return _mm512_mask_loadu_ps(fill, m, p); }
  static F zero_outside(F v, Mask m) { return _mm512_maskz_mov_ps(m, v); }
  // v where x >= t, else 0.
  static F zero_below(F v, F x, F t) { return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, t, _CMP_GE_OQ), v); }
  static void store_tail(float* p, Mask m, F v) { _mm512_mask_storeu_ps(p, m, v); }
  // Lane l takes lane (l + s) mod kLanes.
  static F rotate_lanes(F v, int s) {
    const __m512i idx = _mm512_and_si512(
        _mm512_add_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi32(s)),
        _mm512_set1_epi32(15));
    return _mm512_permutexvar_ps(idx, v);
  }
  static F exp_nonpos(F x) { return exp512(x); }
  // 8 scores (one per head) as one vector.
  using F8 = __m256;
  static F8 set1_8(float x) { return _mm256_set1_ps(x); }
  static F8 mul8(F8 a, F8 b) { return _mm256_mul_ps(a, b); }
  static void store8(float* p, F8 v) { _mm256_storeu_ps(p, v); }
  static void store8_first(float* p, F8 v, int n) { _mm256_mask_storeu_ps(p, static_cast<__mmask8>((1u << n) - 1), v); }
  // The 8 horizontal sums of a[0..7], in order.
  static F8 reduce8(const F (&a)[8]) {
    // Per 128-bit lane, pairs then quads of vectors: lane l of s0123 holds
    // lane l's partial sums of a0..a3.
    const __m512 s01 = _mm512_add_ps(_mm512_unpacklo_ps(a[0], a[1]), _mm512_unpackhi_ps(a[0], a[1]));
    const __m512 s23 = _mm512_add_ps(_mm512_unpacklo_ps(a[2], a[3]), _mm512_unpackhi_ps(a[2], a[3]));
    const __m512 s45 = _mm512_add_ps(_mm512_unpacklo_ps(a[4], a[5]), _mm512_unpackhi_ps(a[4], a[5]));
    const __m512 s67 = _mm512_add_ps(_mm512_unpacklo_ps(a[6], a[7]), _mm512_unpackhi_ps(a[6], a[7]));
    const __m512 s0123 = _mm512_add_ps(_mm512_shuffle_ps(s01, s23, _MM_SHUFFLE(1, 0, 1, 0)),
                                       _mm512_shuffle_ps(s01, s23, _MM_SHUFFLE(3, 2, 3, 2)));
    const __m512 s4567 = _mm512_add_ps(_mm512_shuffle_ps(s45, s67, _MM_SHUFFLE(1, 0, 1, 0)),
                                       _mm512_shuffle_ps(s45, s67, _MM_SHUFFLE(3, 2, 3, 2)));
    // Then across the four lanes.
    const __m512 t = _mm512_add_ps(_mm512_shuffle_f32x4(s0123, s4567, _MM_SHUFFLE(1, 0, 1, 0)),
                                   _mm512_shuffle_f32x4(s0123, s4567, _MM_SHUFFLE(3, 2, 3, 2)));
    const __m512 u = _mm512_add_ps(_mm512_shuffle_f32x4(t, t, _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_f32x4(t, t, _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_castps512_ps256(u);
  }
  // The activation encoders (simd/quantize_act.h).
  static F abs(F x) { return _mm512_abs_ps(x); }
  static float hmax(F v) { return _mm512_reduce_max_ps(v); }
  // Rounds half away from zero like roundf: ggml's Q8_0/Q8_1 reference uses
  // roundf, and the activations must be byte-identical to it. Exact:
  // x - trunc(x) is computed without rounding error for every float.
  static F round_away(F x) {
    const __m512 t = _mm512_roundscale_ps(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __mmask16 up = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(x, t)), _mm512_set1_ps(0.5f), _CMP_GE_OQ);
    // t + sign(x) where rounding away applies.
    const __m512 one = _mm512_castsi512_ps(_mm512_or_si512(
        _mm512_castps_si512(_mm512_set1_ps(1.0f)), _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(INT32_MIN))));
    return _mm512_mask_add_ps(t, up, t, one);
  }
  static I trunc_i32(F x) { return _mm512_cvttps_epi32(x); }
  static I round_i32(F x) { return _mm512_cvtps_epi32(x); }  // half to even (default MXCSR)
  static I add_i32(I a, I b) { return _mm512_add_epi32(a, b); }
  static I min_i32(I a, int b) { return _mm512_min_epi32(a, _mm512_set1_epi32(b)); }
  static int hsum_i32(I v) { return _mm512_reduce_add_epi32(v); }
  // 32 int32 (within int8 range), 2 vectors, to 32 bytes in order.
  static void store_i8_32(int8_t* p, const I (&q)[2]) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_cvtepi32_epi8(q[0]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 16), _mm512_cvtepi32_epi8(q[1]));
  }
  // Bit l set where lane l of a equals lane l of b.
  static uint32_t equal_bits(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ); }

  // The values' register block: a whole output row of up to 8 vectors
  // (head_dim 128) and 16 accumulators (4 heads of 64, 2 of 128).
  static constexpr int kValueVectors = 8;
  static constexpr int kValueAccumulators = 16;
};

}  // namespace
}  // namespace brisk::kernels::avx512
