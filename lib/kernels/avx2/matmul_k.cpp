// SPDX-License-Identifier: MIT
// AVX2 kernels for the K-quants (Q4_K, Q5_K, Q6_K against Q8_K).
//
// Per 32 weights of a row: unpack to unsigned bytes in Q8_K qs order, then per
// column vpmaddubsw (u8 x s8 -> int16 pairs) and vpmaddwd with the sub-block
// scale broadcast to int16 (-> int32, scale applied for free), summed exactly
// in int32 over the super-block; one convert + FMA per super-block.
//
// Offsets go through Q8_K's bsums: Q4_K/Q5_K's mins as dmin * sum m_j bsum_j
// (one vpmaddwd of the 16 bsums against the mins, each repeated twice), Q6_K's
// -32 bias as -32 * sum sc_j bsum_j added to the main int sum.
//
// Loop order in a tile: super-block, row, 32-weight vector, column. A vector
// is unpacked once and used for every column; per-column int sums stay in
// registers (16 ymm allow 2 rows x 3 columns).
//
// Hand-written, not a width-generic template (kernels/simd/): the AVX-512
// tile unpacks a whole super-block into registers and reuses it for every
// column, which 16 ymm cannot hold next to the sums; and its unpacking
// (vpermw, masked shifts and adds) has no AVX2 form of the same shape.
#include "kernels/avx2/common.h"
#include "quant/blocks.h"

namespace brisk::kernels::avx2 {

using quant::BlockQ4_K;
using quant::BlockQ5_K;
using quant::BlockQ6_K;
using quant::BlockQ8_K;
using quant::QK_K;

namespace {

// ggml's get_scale_min_k4 for all 8 sub-blocks: 6-bit scales and mins.
inline void scales_mins_k4(const uint8_t* s, uint8_t* sc, uint8_t* mn) {
  uint32_t u[3];
  std::memcpy(u, s, 12);
  constexpr uint32_t k1 = 0x3f3f3f3f, k2 = 0x0f0f0f0f, k3 = 0x03030303;
  const uint32_t v[4] = {u[0] & k1, (u[2] & k2) | (((u[0] >> 6) & k3) << 4), u[1] & k1,
                         ((u[2] >> 4) & k2) | (((u[1] >> 6) & k3) << 4)};
  std::memcpy(sc, v, 8);
  std::memcpy(mn, v + 2, 8);
}

inline __m256i load256(const void* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// [a x 8 words, b x 8 words]: the scales of two 16-weight sub-blocks.
inline __m256i two_scales16(int a, int b) {
  return _mm256_set_m128i(_mm_set1_epi16(static_cast<short>(b)), _mm_set1_epi16(static_cast<short>(a)));
}

enum class KType { q4_k, q5_k, q6_k };

template <KType T>
struct KTile {
  int64_t nb;
  const uint8_t* w;
  size_t w_stride;
  const uint8_t* act;
  size_t act_stride;
  float* out;
  size_t out_stride;
  size_t pf_dist;  // prefetch this many bytes ahead of each row (next rows)

  static constexpr int kBlockBytes = T == KType::q4_k ? 144 : T == KType::q5_k ? 176 : 210;

  // Adds maddubs(q, act 32 bytes at offset) * scale to every column's sum.
  template <int C>
  static inline void madd_cols(__m256i q, __m256i scale, const BlockQ8_K* const* a, int64_t i, int off,
                               __m256i (&s)[C]) {
    for (int c = 0; c < C; ++c) {
      const __m256i p = _mm256_maddubs_epi16(q, load256(a[c][i].qs + off));
      s[c] = _mm256_add_epi32(s[c], _mm256_madd_epi16(p, scale));
      if constexpr (T != KType::q4_k) keep(s[c]);  // Q4_K's own order measured faster
    }
  }

  template <int R, int C>
  void run(int r0, int c0) {
    const BlockQ8_K* ac[C];
    for (int c = 0; c < C; ++c)
      ac[c] = reinterpret_cast<const BlockQ8_K*>(act + static_cast<size_t>(c0 + c) * act_stride);
    __m256 acc[R][C];
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
    const __m256i lo4 = _mm256_set1_epi8(0x0F);

    for (int64_t i = 0; i < nb; ++i) {
      for (int r = 0; r < R; ++r) {
        const uint8_t* row = w + static_cast<size_t>(r0 + r) * w_stride;
        prefetch_bytes<kBlockBytes>(row + pf_dist + i * kBlockBytes);
        __m256i s[C];
        for (int c = 0; c < C; ++c) s[c] = _mm256_setzero_si256();
        float d, dmin = 0;
        __m256i corr;  // int16 words multiplied with the bsums
        if constexpr (T == KType::q6_k) {
          const auto* b = reinterpret_cast<const BlockQ6_K*>(row) + i;
          d = h2f(b->d);
          for (int n = 0; n < 2; ++n) {
            const __m256i a0 = load256(b->ql + 64 * n);
            const __m256i a1 = load256(b->ql + 64 * n + 32);
            const __m256i h = load256(b->qh + 32 * n);
            const __m256i m2 = _mm256_set1_epi8(0x30);
            // Positions 0..31 take qh bits 0-1, 32..63 bits 2-3, 64..95 bits
            // 4-5, 96..127 bits 6-7, each moved to bits 4-5.
            const __m256i q[4] = {
                _mm256_or_si256(_mm256_and_si256(a0, lo4), _mm256_and_si256(_mm256_slli_epi16(h, 4), m2)),
                _mm256_or_si256(_mm256_and_si256(a1, lo4), _mm256_and_si256(_mm256_slli_epi16(h, 2), m2)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a0, 4), lo4), _mm256_and_si256(h, m2)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a1, 4), lo4),
                                _mm256_and_si256(_mm256_srli_epi16(h, 2), m2))};
            for (int t = 0; t < 4; ++t) {
              const int8_t* sc = b->scales + 8 * n + 2 * t;
              madd_cols<C>(q[t], two_scales16(sc[0], sc[1]), ac, i, 128 * n + 32 * t, s);
            }
          }
          // Weights were taken as q+32: subtract 32 * sum_j sc_j * bsum_j.
          corr = _mm256_mullo_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b->scales))),
                                    _mm256_set1_epi16(-32));
        } else {
          const uint8_t *scales, *qs, *qh = nullptr;
          if constexpr (T == KType::q4_k) {
            const auto* b = reinterpret_cast<const BlockQ4_K*>(row) + i;
            d = h2f(b->d), dmin = h2f(b->dmin), scales = b->scales, qs = b->qs;
          } else {
            const auto* b = reinterpret_cast<const BlockQ5_K*>(row) + i;
            d = h2f(b->d), dmin = h2f(b->dmin), scales = b->scales, qs = b->qs, qh = b->qh;
          }
          uint8_t sc[8], mn[8];
          scales_mins_k4(scales, sc, mn);
          __m256i hb = _mm256_setzero_si256();
          if (T == KType::q5_k) hb = load256(qh);
          for (int j = 0; j < 4; ++j) {
            const __m256i q = load256(qs + 32 * j);
            __m256i lo = _mm256_and_si256(q, lo4);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), lo4);
            if constexpr (T == KType::q5_k) {
              // Fifth bit: qh bit 2j (low nibbles), 2j+1 (high nibbles).
              const __m256i one = _mm256_set1_epi8(1);
              lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * j), one), 4));
              hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * j + 1), one), 4));
            }
            madd_cols<C>(lo, _mm256_set1_epi16(sc[2 * j]), ac, i, 64 * j, s);
            madd_cols<C>(hi, _mm256_set1_epi16(sc[2 * j + 1]), ac, i, 64 * j + 32, s);
          }
          // Each min covers two bsums: [m0, m0, m1, m1, ...].
          const __m128i m = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(mn)));
          corr = _mm256_set_m128i(_mm_unpackhi_epi16(m, m), _mm_unpacklo_epi16(m, m));
        }
        for (int c = 0; c < C; ++c) {
          const BlockQ8_K& a = ac[c][i];
          const __m256i bm = _mm256_madd_epi16(load256(a.bsums), corr);
          if constexpr (T == KType::q6_k) {
            s[c] = _mm256_add_epi32(s[c], bm);
            acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[c]), _mm256_set1_ps(d * a.d), acc[r][c]);
          } else {
            acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[c]), _mm256_set1_ps(d * a.d), acc[r][c]);
            acc[r][c] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(bm), _mm256_set1_ps(dmin * a.d), acc[r][c]);
          }
        }
      }
    }
    for (int c = 0; c < C; ++c)
      for (int r = 0; r < R; ++r) out[static_cast<size_t>(c0 + c) * out_stride + r0 + r] = hsum(acc[r][c]);
  }
};

template <KType T>
void gemm_k(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride,
            int ncols, float* out, size_t out_stride) {
  KTile<T> t{k / QK_K, static_cast<const uint8_t*>(w), w_stride, static_cast<const uint8_t*>(act),
             act_stride, out, out_stride, prefetch_distance(ncols, w_stride)};
  if (ncols == 1) {
    for_each_tile<1, 1>(t, nrows, 0, ncols, w_stride);
  } else {
    for_each_tile<2, 3>(t, nrows, 0, ncols, w_stride);
  }
}

}  // namespace

void gemm_q4_k(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
               size_t act_stride, int ncols, float* out, size_t out_stride) {
  gemm_k<KType::q4_k>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}
void gemm_q5_k(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
               size_t act_stride, int ncols, float* out, size_t out_stride) {
  gemm_k<KType::q5_k>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}
void gemm_q6_k(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
               size_t act_stride, int ncols, float* out, size_t out_stride) {
  gemm_k<KType::q6_k>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}

}  // namespace brisk::kernels::avx2
