// SPDX-License-Identifier: MIT
// Helpers shared by the quantizer files, and the per-family entry points that
// quant.cpp dispatches to. Not part of the public quant.h interface.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/fp16.h"
#include "quant/blocks.h"

namespace brisk::quant::detail {

// ggml's nearest_int: adding 1.5*2^23 puts the rounded integer in the low
// mantissa bits (round half to even, by the FPU). Bit-exactness with ggml
// depends on using exactly this and not lrintf/roundf. Valid for |v| < 2^22;
// NaN maps to a fixed value instead of undefined behaviour.
inline int nearest_int(float v) {
  const float biased = v + 12582912.f;
  int32_t i;
  std::memcpy(&i, &biased, sizeof(i));
  return (i & 0x007fffff) - 0x00400000;
}

inline float h2f(uint16_t h) { return fp16_to_f32(h); }
inline uint16_t f2h(float f) { return f32_to_fp16(f); }

// Sub-block scale/min unpacking shared by Q4_K and Q5_K (ggml's get_scale_min_k4):
// 8 six-bit scales and 8 six-bit mins in 12 bytes.
inline void get_scale_min_k4(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4);
  }
}

inline void set_scale_min_k4(int j, uint8_t* q, uint8_t ls, uint8_t lm) {
  if (j < 4) {
    q[j] = ls;
    q[j + 4] = lm;
  } else {
    q[j + 4] = (ls & 0xF) | ((lm & 0xF) << 4);
    q[j - 4] |= (ls >> 4) << 6;
    q[j - 0] |= (lm >> 4) << 6;
  }
}

// Sum of w[i]*(a[i]-b[i])^2 in double: candidate encodings are ranked by this,
// so it must not itself be the noisy part of the comparison.
inline double weighted_sq_error(const float* a, const float* b, const float* w, int n) {
  double e = 0;
  for (int i = 0; i < n; ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    e += static_cast<double>(w[i]) * d * d;
  }
  return e;
}

// --- Importance-weighted fits (quant_search.cpp). Only used when the caller
// passes importance; none of this affects the ggml-identical paths. Weights
// that sum to zero are treated as uniform (any fit is then equally good, and
// a sane one keeps the numbers usable). n <= 256 for all three.

// Symmetric grid: x ~ d * L with integer L in [qmin, qmax] (qmin < 0 < qmax).
// Minimises sum w*(x - d*L)^2 over a small set of scales, each refined by
// weighted least squares; with fp16_scale the returned d is already rounded
// to half precision and L is re-chosen for that rounded d.
float fit_symmetric(const float* x, const float* w, int n, int qmin, int qmax, bool fp16_scale,
                    int* L);

// Affine grid: x ~ d * L + m with L in [0, nmax]. With nonpositive_min, m is
// forced <= 0 (K-quant mins are stored negated in unsigned fields) and d >= 0.
// With fp16, d and m are rounded to half precision before L is re-chosen.
float fit_affine(const float* x, const float* w, int n, int nmax, bool nonpositive_min, bool fp16,
                 int* L, float* m);

// Non-negative values v ~ d * L with L in [0, nmax], d rounded to fp16: used
// for the 6-bit sub-block scales and mins of Q4_K/Q5_K.
float fit_levels_fp16(const float* v, const float* w, int n, int nmax, int* L);

// Per-family entry points (n is a multiple of the block size).
void quantize_q4_0(const float* x, BlockQ4_0* y, int64_t n, const float* imp);
void quantize_q4_1(const float* x, BlockQ4_1* y, int64_t n, const float* imp);
void quantize_q8_0(const float* x, BlockQ8_0* y, int64_t n, const float* imp);
void quantize_q8_1(const float* x, BlockQ8_1* y, int64_t n);
void dequantize_q4_0(const BlockQ4_0* x, float* y, int64_t n);
void dequantize_q4_1(const BlockQ4_1* x, float* y, int64_t n);
void dequantize_q8_0(const BlockQ8_0* x, float* y, int64_t n);
void dequantize_q8_1(const BlockQ8_1* x, float* y, int64_t n);

void quantize_q4_k(const float* x, BlockQ4_K* y, int64_t n, const float* imp);
void quantize_q5_k(const float* x, BlockQ5_K* y, int64_t n, const float* imp);
void quantize_q6_k(const float* x, BlockQ6_K* y, int64_t n, const float* imp);
void quantize_q8_k(const float* x, BlockQ8_K* y, int64_t n);
void dequantize_q4_k(const BlockQ4_K* x, float* y, int64_t n);
void dequantize_q5_k(const BlockQ5_K* x, float* y, int64_t n);
void dequantize_q6_k(const BlockQ6_K* x, float* y, int64_t n);
void dequantize_q8_k(const BlockQ8_K* x, float* y, int64_t n);

}  // namespace brisk::quant::detail
