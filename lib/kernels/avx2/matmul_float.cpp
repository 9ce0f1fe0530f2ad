// SPDX-License-Identifier: MIT
// AVX2 kernels for float weights (F32, F16, BF16) against F32 activations.
//
// Each 8-wide step loads one vector per weight row (converted to f32) and one
// per activation column, then does R x C FMAs. With 16 ymm registers a 3 x 3
// tile (9 accumulators + 3 activations + 1 weight) is the largest that does
// not spill.
// Decode (one column) walks the rows one by one: a single linear stream
// the hardware prefetcher follows (see common.h).
#include "kernels/avx2/common.h"

namespace brisk::kernels::avx2 {

namespace {

// Lanes [0, n) all-ones, for maskload.
inline __m256i lane_mask(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// Weight loaders: 8 consecutive weights of a row starting at element i as
// f32, and a variant for the row tail (n < 8 elements, rest read as 0).
struct LoadF32 {
  static __m256 load(const uint8_t* p, int64_t i) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(p) + i);
  }
  static __m256 load_tail(const uint8_t* p, int64_t i, int64_t n) {
    return _mm256_maskload_ps(reinterpret_cast<const float*>(p) + i, lane_mask(n));
  }
};

// 16-bit tails have no masked load in AVX2: copy into a zeroed buffer.
inline __m128i load_u16_tail(const uint8_t* p, int64_t i, int64_t n) {
  uint16_t buf[8] = {};
  std::memcpy(buf, p + 2 * i, static_cast<size_t>(n) * 2);
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(buf));
}

struct LoadF16 {
  static __m256 load(const uint8_t* p, int64_t i) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * i)));
  }
  static __m256 load_tail(const uint8_t* p, int64_t i, int64_t n) {
    return _mm256_cvtph_ps(load_u16_tail(p, i, n));
  }
};

// bf16 is the top half of an f32: zero-extend and shift (exact).
struct LoadBF16 {
  static __m256 widen(__m128i h) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  static __m256 load(const uint8_t* p, int64_t i) {
    return widen(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * i)));
  }
  static __m256 load_tail(const uint8_t* p, int64_t i, int64_t n) { return widen(load_u16_tail(p, i, n)); }
};

template <typename L>
struct FloatTile {
  int64_t k;
  const uint8_t* w;
  size_t w_stride;
  const uint8_t* act;
  size_t act_stride;
  float* out;
  size_t out_stride;

  template <int R, int C>
  void run(int r0, int c0) {
    const uint8_t* wr[R];
    const float* xc[C];
    for (int r = 0; r < R; ++r) wr[r] = w + static_cast<size_t>(r0 + r) * w_stride;
    for (int c = 0; c < C; ++c)
      xc[c] = reinterpret_cast<const float*>(act + static_cast<size_t>(c0 + c) * act_stride);
    __m256 acc[R][C];
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();

    int64_t i = 0;
    for (; i + 8 <= k; i += 8) {
      __m256 x[C];
      for (int c = 0; c < C; ++c) x[c] = _mm256_loadu_ps(xc[c] + i);
      for (int r = 0; r < R; ++r) {
        const __m256 wv = L::load(wr[r], i);
        for (int c = 0; c < C; ++c) acc[r][c] = _mm256_fmadd_ps(wv, x[c], acc[r][c]);
      }
    }
    if (i < k) {
      __m256 x[C];
      for (int c = 0; c < C; ++c) x[c] = _mm256_maskload_ps(xc[c] + i, lane_mask(k - i));
      for (int r = 0; r < R; ++r) {
        const __m256 wv = L::load_tail(wr[r], i, k - i);
        for (int c = 0; c < C; ++c) acc[r][c] = _mm256_fmadd_ps(wv, x[c], acc[r][c]);
      }
    }
    for (int c = 0; c < C; ++c)
      for (int r = 0; r < R; ++r) out[static_cast<size_t>(c0 + c) * out_stride + r0 + r] = hsum(acc[r][c]);
  }
};

template <typename L>
void gemm_float(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
                size_t act_stride, int ncols, float* out, size_t out_stride) {
  FloatTile<L> t{k,   static_cast<const uint8_t*>(w), w_stride, static_cast<const uint8_t*>(act),
                 act_stride, out, out_stride};
  if (ncols == 1) {
    for_each_tile<1, 1>(t, nrows, 0, ncols, w_stride);
  } else {
    for_each_tile<3, 3>(t, nrows, 0, ncols, w_stride);
  }
}

}  // namespace

void quantize_f32(const float* x, void* out, int64_t k) {
  std::memcpy(out, x, static_cast<size_t>(k) * sizeof(float));
}

void gemm_f32(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
              size_t act_stride, int ncols, float* out, size_t out_stride) {
  gemm_float<LoadF32>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}
void gemm_f16(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
              size_t act_stride, int ncols, float* out, size_t out_stride) {
  gemm_float<LoadF16>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}
void gemm_bf16(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
               size_t act_stride, int ncols, float* out, size_t out_stride) {
  gemm_float<LoadBF16>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}

}  // namespace brisk::kernels::avx2
