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
  static void* scratch(size_t bytes) { return avx512::scratch(bytes); }
};

}  // namespace
}  // namespace brisk::kernels::avx512
