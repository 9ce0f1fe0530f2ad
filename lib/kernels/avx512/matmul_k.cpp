// SPDX-License-Identifier: MIT
// AVX-512 VNNI kernels for the K-quants (Q4_K, Q5_K, Q6_K against Q8_K).
//
// A super-block of 256 weights is unpacked into four 64-byte vectors of
// unsigned bytes whose order matches Q8_K's qs exactly (vpmaddubsw pairs them
// byte for byte), plus per-16-bit-word sub-block scales. Per (row, column) a
// super-block then costs 4 x (vpmaddubsw + vpdpwssd): the sub-block scales are
// applied by vpdpwssd for free, the sum stays exact in int32, and only one
// convert + FMA per super-block touches floats.
//
// The offsets are handled through Q8_K's bsums (sums of 16 activations):
// Q4_K/Q5_K's mins give dmin * sum_j m_j * bsum_j (one more vpdpwssd with the
// 16 bsums), and Q6_K's -32 bias folds into the main int sum as
// -32 * sum_j sc_j * bsum_j (same instruction, scale pre-multiplied by -32).
//
// Rows outer, columns inner: a row's super-block is unpacked once into
// registers and reused for every column of the tile; activations are memory
// operands (L1-resident, 292 bytes per column per super-block).
//
// Hand-written, not a width-generic template (kernels/simd/): AVX2's tile
// (avx2/matmul_k.cpp) is shaped by its 16 registers, unpacking 32 weights
// at a time inside the column loop.
#include "kernels/avx512/common.h"
#include "quant/blocks.h"

namespace brisk::kernels::avx512 {

using quant::BlockQ4_K;
using quant::BlockQ5_K;
using quant::BlockQ6_K;
using quant::BlockQ8_K;
using quant::QK_K;

namespace {

struct alignas(64) WordIdx {
  uint16_t v[32];
};
template <typename F>
constexpr WordIdx make_idx(F f) {
  WordIdx r{};
  for (int i = 0; i < 32; ++i) r.v[i] = static_cast<uint16_t>(f(i));
  return r;
}
inline __m512i idx(const WordIdx& w) { return _mm512_load_si512(w.v); }

// Q4_K/Q5_K chunk j covers sub-blocks 2j (bytes 0..31) and 2j+1 (32..63):
// every word of the low half gets scale word 2j, the high half 2j+1.
constexpr WordIdx kScale4[4] = {
    make_idx([](int i) { return i < 16 ? 0 : 1; }), make_idx([](int i) { return i < 16 ? 2 : 3; }),
    make_idx([](int i) { return i < 16 ? 4 : 5; }), make_idx([](int i) { return i < 16 ? 6 : 7; })};
// Q6_K vector v (0..3) covers positions 64v..64v+63 = 16-weight sub-blocks
// 4v..4v+3; word i holds positions 2i, 2i+1, so scale word 4v + i/8.
constexpr WordIdx kScale6[4] = {make_idx([](int i) { return 0 + i / 8; }),
                                make_idx([](int i) { return 4 + i / 8; }),
                                make_idx([](int i) { return 8 + i / 8; }),
                                make_idx([](int i) { return 12 + i / 8; })};
// Q4_K/Q5_K mins: bsum 2j and 2j+1 both belong to sub-block j.
constexpr WordIdx kMins = make_idx([](int i) { return i < 16 ? i / 2 : 8; });

// The 8 six-bit scales and mins of a Q4_K/Q5_K block as 16-bit words
// (ggml's get_scale_min_k4 for all j at once): scales in words 0..7, mins in
// words 8..15 of the result.
inline __m128i scales_mins_k4(const uint8_t* s, __m128i* mins) {
  uint32_t u[3];
  std::memcpy(u, s, 12);
  constexpr uint32_t k1 = 0x3f3f3f3f, k2 = 0x0f0f0f0f, k3 = 0x03030303;
  const uint32_t sc_lo = u[0] & k1;
  const uint32_t sc_hi = (u[2] & k2) | (((u[0] >> 6) & k3) << 4);
  const uint32_t mn_lo = u[1] & k1;
  const uint32_t mn_hi = ((u[2] >> 4) & k2) | (((u[1] >> 6) & k3) << 4);
  *mins = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(mn_lo | static_cast<uint64_t>(mn_hi) << 32)));
  return _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(sc_lo | static_cast<uint64_t>(sc_hi) << 32)));
}

// One row's super-block, unpacked.
struct KBlock {
  __m512i q[4];    // unsigned weights, Q8_K qs order, 64 per vector
  __m512i sc[4];   // int16 scale for each word of maddubs(q[v], a)
  __m512i corr;    // int16 words multiplied with bsums (zero-extended to 512)
  float d, dmin;   // dmin: 0 for Q6_K (its bias is inside corr)
};

// Q4_K and Q5_K share everything but the fifth bit (qh == nullptr: none).
inline void load_q45k(uint16_t d, uint16_t dmin, const uint8_t* scales, const uint8_t* qs,
                      const uint8_t* qh, KBlock& k) {
  const bool has_qh = qh != nullptr;
  __m128i mins;
  const __m512i sc = _mm512_zextsi128_si512(scales_mins_k4(scales, &mins));
  const __m512i nib = _mm512_set1_epi8(0x0F);
  __m512i hz;
  if (has_qh) hz = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh)));
  for (int j = 0; j < 4; ++j) {
    // [qs chunk, qs chunk] then the high half shifted: low nibbles are
    // sub-block 2j, high nibbles 2j+1.
    const __m512i r = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * j)));
    __m512i q = _mm512_and_si512(_mm512_mask_srli_epi16(r, 0xFFFF0000u, r, 4), nib);
    if (has_qh) {
      // Fifth bit: qh bit 2j for the low half, 2j+1 for the high half.
      const __m512i bits = _mm512_mask_blend_epi64(0xF0, _mm512_set1_epi8(static_cast<char>(1 << (2 * j))),
                                                   _mm512_set1_epi8(static_cast<char>(2 << (2 * j))));
      q = _mm512_mask_add_epi8(q, _mm512_test_epi8_mask(hz, bits), q, _mm512_set1_epi8(16));
    }
    k.q[j] = q;
    k.sc[j] = _mm512_permutexvar_epi16(idx(kScale4[j]), sc);
  }
  k.corr = _mm512_maskz_permutexvar_epi16(0xFFFF, idx(kMins), _mm512_zextsi128_si512(mins));
  k.d = h2f(d);
  k.dmin = h2f(dmin);
}

inline void load_q6k(const BlockQ6_K* b, KBlock& k) {
  const __m512i sc = _mm512_zextsi256_si512(
      _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b->scales))));
  const __m512i lo4 = _mm512_set1_epi8(0x0F);
  const __m512i hi2 = _mm512_set1_epi8(0x30);
  for (int n = 0; n < 2; ++n) {
    const __m512i ql = _mm512_loadu_si512(b->ql + 64 * n);
    const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qh + 32 * n)));
    // Positions 0..31 take qh bits 0-1, 32..63 bits 2-3, 64..95 bits 4-5,
    // 96..127 bits 6-7; each moved to bits 4-5 (the 16s and 32s).
    const __m512i h1 = _mm512_and_si512(_mm512_mask_slli_epi16(_mm512_slli_epi16(qh, 4), 0xFFFF0000u, qh, 2), hi2);
    const __m512i h2 = _mm512_and_si512(_mm512_mask_srli_epi16(qh, 0xFFFF0000u, qh, 2), hi2);
    k.q[2 * n] = _mm512_or_si512(_mm512_and_si512(ql, lo4), h1);
    k.q[2 * n + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), lo4), h2);
  }
  for (int v = 0; v < 4; ++v) k.sc[v] = _mm512_permutexvar_epi16(idx(kScale6[v]), sc);
  // Weights were taken as q+32: subtract 32 * sum_j sc_j * bsum_j.
  k.corr = _mm512_sub_epi16(_mm512_setzero_si512(), _mm512_slli_epi16(sc, 5));
  k.d = h2f(b->d);
  k.dmin = 0;
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

  template <int R, int C>
  void run(int r0, int c0) {
    const BlockQ8_K* ac[C];
    for (int c = 0; c < C; ++c)
      ac[c] = reinterpret_cast<const BlockQ8_K*>(act + static_cast<size_t>(c0 + c) * act_stride);
    __m512 acc[R][C];
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();

    for (int64_t i = 0; i < nb; ++i) {
      for (int r = 0; r < R; ++r) {
        const uint8_t* row = w + static_cast<size_t>(r0 + r) * w_stride;
        prefetch_bytes<kBlockBytes>(row + pf_dist + i * kBlockBytes);
        KBlock kb;
        if constexpr (T == KType::q4_k) {
          const auto* b = reinterpret_cast<const BlockQ4_K*>(row) + i;
          load_q45k(b->d, b->dmin, b->scales, b->qs, nullptr, kb);
        } else if constexpr (T == KType::q5_k) {
          const auto* b = reinterpret_cast<const BlockQ5_K*>(row) + i;
          load_q45k(b->d, b->dmin, b->scales, b->qs, b->qh, kb);
        } else {
          load_q6k(reinterpret_cast<const BlockQ6_K*>(row) + i, kb);
        }
        for (int c = 0; c < C; ++c) {
          const BlockQ8_K& a = ac[c][i];
          const __m512i bs = _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.bsums)));
          __m512i s = _mm512_setzero_si512();
          for (int v = 0; v < 4; ++v) {
            const __m512i p = _mm512_maddubs_epi16(kb.q[v], _mm512_loadu_si512(a.qs + 64 * v));
            s = _mm512_dpwssd_epi32(s, p, kb.sc[v]);
          }
          if constexpr (T == KType::q6_k) {
            s = _mm512_dpwssd_epi32(s, bs, kb.corr);
            acc[r][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_set1_ps(kb.d * a.d), acc[r][c]);
          } else {
            const __m512i m = _mm512_dpwssd_epi32(_mm512_setzero_si512(), bs, kb.corr);
            acc[r][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_set1_ps(kb.d * a.d), acc[r][c]);
            acc[r][c] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(m), _mm512_set1_ps(kb.dmin * a.d), acc[r][c]);
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
    for_each_tile<4, 4>(t, nrows, 0, ncols, w_stride);
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

}  // namespace brisk::kernels::avx512
