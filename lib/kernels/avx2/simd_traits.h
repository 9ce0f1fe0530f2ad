// SPDX-License-Identifier: MIT
// The AVX2 vector: 8 float lanes in a ymm, as the operations the
// width-generic kernels of kernels/simd/ are written in. Included only by
// files under avx2/, so every template instantiated with it is compiled
// with this folder's flags; it lives in an anonymous namespace, like those
// templates, so nothing here has external linkage (common.h: ODR).
#pragma once
#include "kernels/avx2/common.h"

namespace brisk::kernels::avx2 {
namespace {

struct Vec {
  static constexpr int kLanes = 8;
  using F = __m256;   // kLanes floats
  using I = __m256i;  // the same bits as integers
  // Lanes [0, n) of a tail: an all-ones int32 lane each, as maskload takes.
  using Mask = __m256i;

  static F zero() { return _mm256_setzero_ps(); }
  static F set1(float x) { return _mm256_set1_ps(x); }
  static F load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, F v) { _mm256_storeu_ps(p, v); }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F fmadd(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static float hsum(F v) { return avx2::hsum(v); }
  // Eight double partial sums (rmsnorm) in two ymm: partials 0-3, 4-7.
  struct D8 {
    __m256d lo, hi;
  };
  static D8 zero_d8() { return {_mm256_setzero_pd(), _mm256_setzero_pd()}; }
  // d + x[j]^2 per partial j, x[0..8) widened to double (its square is exact
  // there, so a fused and an unfused add give the same sum).
  static D8 add_squares8(D8 d, const float* x) {
    const __m256d lo = _mm256_cvtps_pd(_mm_loadu_ps(x)), hi = _mm256_cvtps_pd(_mm_loadu_ps(x + 4));
    return {_mm256_fmadd_pd(lo, lo, d.lo), _mm256_fmadd_pd(hi, hi, d.hi)};
  }
  static void store_d8(double* p, D8 d) {
    _mm256_storeu_pd(p, d.lo);
    _mm256_storeu_pd(p + 4, d.hi);
  }

  // Aligned (the repacked activations of simd/q_tiles.h).
  static F load_aligned(const float* p) { return _mm256_load_ps(p); }
  static I load_i_aligned(const void* p) { return _mm256_load_si256(static_cast<const __m256i*>(p)); }

  static Mask tail_mask(int64_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  // Lanes past the mask read as 0 and touch no memory.
  static F load_tail(const float* p, Mask m) { return _mm256_maskload_ps(p, m); }

  // kLanes fp16 / bf16 values as floats (exact); the tails read n < kLanes
  // values. 16-bit tails have no masked load in AVX2: they are copied into
  // a zeroed buffer.
  static __m128i load_u16_tail(const uint16_t* p, int64_t n) {
    uint16_t buf[8] = {};
    std::memcpy(buf, p, static_cast<size_t>(n) * 2);
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(buf));
  }
  static F load_f16(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static F load_f16_tail(const uint16_t* p, int64_t n, Mask) { return _mm256_cvtph_ps(load_u16_tail(p, n)); }
  // bf16 is the top half of an f32: zero-extend and shift.
  static F widen_bf16(__m128i h) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); }
  static F load_bf16(const uint16_t* p) { return widen_bf16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static F load_bf16_tail(const uint16_t* p, int64_t n, Mask) { return widen_bf16(load_u16_tail(p, n)); }
  // kLanes floats to fp16, round to nearest even (bit-exact with core/fp16.h).
  static void store_f16(uint16_t* p, F v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  // kLanes int8 as floats.
  static F load_i8(const int8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  static float h2f(uint16_t h) { return avx2::h2f(h); }
  static uint16_t f2h(float f) { return avx2::f2h(f); }

  // 64-bit integer lanes (read_sum).
  static I zero_i() { return _mm256_setzero_si256(); }
  static I load_i(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static I add_u64(I a, I b) { return _mm256_add_epi64(a, b); }
  static uint64_t hsum_u64(I v) {
    alignas(32) uint64_t lanes[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), v);
    return lanes[0] + lanes[1] + lanes[2] + lanes[3];
  }

  // The 32-weight block tiles (simd/q_tiles.h): blocks per vector, one per
  // 128-bit lane.
  static constexpr int kQBlocks = 2;
  static F cvt_i32(I v) { return _mm256_cvtepi32_ps(v); }
  static F cast_f(I v) { return _mm256_castsi256_ps(v); }
  static void* scratch(size_t bytes) { return kernels::scratch(bytes); }

  // Attention (simd/attend.h).
  static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static F div(F a, F b) { return _mm256_div_ps(a, b); }
  static F max(F a, F b) { return _mm256_max_ps(a, b); }
  // The masked lanes of p, fill elsewhere.
  static F load_tail_or(const float* p, Mask m, F fill) {
    return _mm256_blendv_ps(fill, _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
  }
  static F zero_outside(F v, Mask m) { return _mm256_and_ps(v, _mm256_castsi256_ps(m)); }
  // v where x >= t, else 0.
  static F zero_below(F v, F x, F t) { return _mm256_and_ps(v, _mm256_cmp_ps(x, t, _CMP_GE_OQ)); }
  static void store_tail(float* p, Mask m, F v) { _mm256_maskstore_ps(p, m, v); }
  // Lane l takes lane (l + s) mod kLanes.
  static F rotate_lanes(F v, int s) {
    const __m256i idx = _mm256_and_si256(_mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(s)),
                                         _mm256_set1_epi32(7));
    return _mm256_permutevar8x32_ps(v, idx);
  }
  // e^x for x <= 0 (softmax arguments), as avx512's exp512: 2^n * p(r).
  static F exp_nonpos(F x) {
    x = _mm256_max_ps(x, _mm256_set1_ps(-87.0f));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    const __m256 y = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    // 2^n for n in [-126, 0]: the exponent field.
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
  }
  // 8 scores (one per head) as one vector.
  using F8 = __m256;
  static F8 set1_8(float x) { return _mm256_set1_ps(x); }
  static F8 mul8(F8 a, F8 b) { return _mm256_mul_ps(a, b); }
  static void store8(float* p, F8 v) { _mm256_storeu_ps(p, v); }
  static void store8_first(float* p, F8 v, int n) { _mm256_maskstore_ps(p, tail_mask(n), v); }
  // The 8 horizontal sums of a[0..7], in order.
  static F8 reduce8(const F (&a)[8]) {
    const __m256 t0 = _mm256_hadd_ps(a[0], a[1]), t1 = _mm256_hadd_ps(a[2], a[3]);
    const __m256 t2 = _mm256_hadd_ps(a[4], a[5]), t3 = _mm256_hadd_ps(a[6], a[7]);
    const __m256 u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);
    // u0 lane-half h holds a0..a3's sums over half h; u1 those of a4..a7.
    return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
  }
  // The activation encoders (simd/quantize_act.h).
  static F abs(F x) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x); }
  static float hmax(F v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  // Rounds half away from zero like roundf: ggml's Q8_0/Q8_1 reference uses
  // roundf, and the activations must be byte-identical to it. Exact:
  // x - trunc(x) is computed without rounding error for every float.
  static F round_away(F x) {
    const __m256 t = _mm256_round_ps(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 frac = abs(_mm256_sub_ps(x, t));
    const __m256 up = _mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ);
    // sign(x) * 1 where rounding away applies, else 0.
    const __m256 one = _mm256_or_ps(_mm256_set1_ps(1.0f), _mm256_and_ps(x, _mm256_set1_ps(-0.0f)));
    return _mm256_add_ps(t, _mm256_and_ps(up, one));
  }
  static I trunc_i32(F x) { return _mm256_cvttps_epi32(x); }
  static I round_i32(F x) { return _mm256_cvtps_epi32(x); }  // half to even (default MXCSR)
  static I add_i32(I a, I b) { return _mm256_add_epi32(a, b); }
  static I min_i32(I a, int b) { return _mm256_min_epi32(a, _mm256_set1_epi32(b)); }
  static int hsum_i32(I v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
  }
  // 32 int32 (within int8 range), 4 vectors, to 32 bytes in order.
  static void store_i8_32(int8_t* p, const I (&q)[4]) {
    const __m256i ab = _mm256_packs_epi32(q[0], q[1]);
    const __m256i cd = _mm256_packs_epi32(q[2], q[3]);
    // packs works per 128-bit lane; undo the lane interleave.
    const __m256i v = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(ab, cd), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
  }
  // Bit l set where lane l of a equals lane l of b.
  static uint32_t equal_bits(F a, F b) {
    return static_cast<uint32_t>(_mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_EQ_OQ)));
  }

  // The values' register block: 4 value vectors and 2 heads' 4 output
  // vectors (two heads: half a load per FMA, where one head's 8 vectors took
  // one each and ran at half the speed).
  static constexpr int kValueVectors = 4;
  static constexpr int kValueAccumulators = 8;
};

}  // namespace
}  // namespace brisk::kernels::avx2
