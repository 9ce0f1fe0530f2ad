// SPDX-License-Identifier: MIT
// AVX-512 kernels for float weights (F32, F16, BF16) against F32 activations.
//
// Each 16-wide step loads one vector per weight row (converted to f32) and one
// per activation column, then does R x C FMAs: a 4 x 4 tile gives 16
// independent accumulators, enough to hide FMA latency and to use each loaded
// weight vector four times.
// Decode (one column) walks the rows one by one: a single linear stream
// the hardware prefetcher follows (see common.h).
#include "kernels/avx512/common.h"

namespace brisk::kernels::avx512 {

namespace {

// Weight loaders: 16 consecutive weights of a row starting at element i as
// f32, and a masked variant for the row tail (lanes past the mask read as 0
// and touch no memory).
struct LoadF32 {
  static __m512 load(const uint8_t* p, int64_t i) {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(p) + i);
  }
  static __m512 load_tail(const uint8_t* p, int64_t i, __mmask16 m) {
    return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(p) + i);
  }
};

struct LoadF16 {
  static __m512 load(const uint8_t* p, int64_t i) {
    return _mm512_cvtph_ps(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(reinterpret_cast<const uint16_t*>(p) + i)));
  }
  static __m512 load_tail(const uint8_t* p, int64_t i, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, reinterpret_cast<const uint16_t*>(p) + i));
  }
};

// bf16 is the top half of an f32, so widening is a zero-extend and a shift;
// exact, unlike converting the activations down to bf16 for vdpbf16ps.
struct LoadBF16 {
  static __m512 widen(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static __m512 load(const uint8_t* p, int64_t i) {
    return widen(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(reinterpret_cast<const uint16_t*>(p) + i)));
  }
  static __m512 load_tail(const uint8_t* p, int64_t i, __mmask16 m) {
    return widen(_mm256_maskz_loadu_epi16(m, reinterpret_cast<const uint16_t*>(p) + i));
  }
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
    __m512 acc[R][C];
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();

    int64_t i = 0;
    for (; i + 16 <= k; i += 16) {
      __m512 x[C];
      for (int c = 0; c < C; ++c) x[c] = _mm512_loadu_ps(xc[c] + i);
      for (int r = 0; r < R; ++r) {
        const __m512 wv = L::load(wr[r], i);
        for (int c = 0; c < C; ++c) acc[r][c] = _mm512_fmadd_ps(wv, x[c], acc[r][c]);
      }
    }
    if (i < k) {
      const __mmask16 m = lane_mask(k - i);
      __m512 x[C];
      for (int c = 0; c < C; ++c) x[c] = _mm512_maskz_loadu_ps(m, xc[c] + i);
      for (int r = 0; r < R; ++r) {
        const __m512 wv = L::load_tail(wr[r], i, m);
        for (int c = 0; c < C; ++c) acc[r][c] = _mm512_fmadd_ps(wv, x[c], acc[r][c]);
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
    for_each_tile<4, 4>(t, nrows, 0, ncols, w_stride);
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

}  // namespace brisk::kernels::avx512
