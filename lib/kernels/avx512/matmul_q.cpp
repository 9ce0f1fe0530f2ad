// SPDX-License-Identifier: MIT
// AVX-512 VNNI kernels for the 32-weight block types: Q8_0 and Q4_0 (against
// Q8_0 activations) and Q4_1 (against Q8_1).
//
// The tiles are simd/q_tiles.h's, in its lane layout with four blocks per
// zmm ("a group"); this file holds what is AVX-512's own: the activation
// repacking, the weight loaders (vpermw gathers) and the VNNI dot step.
//
// vpdpbusd multiplies unsigned by signed bytes. The weights are made the
// unsigned side: Q4 nibbles already are (0..15), Q8_0 weights get +128. The
// offset (8 or 128 times the activation sum) is subtracted by starting each
// block's int32 accumulator at -offset * (partial sums of the activations),
// which is computed once per column when the activations are repacked.
#include "kernels/avx512/simd_traits.h"
#include "kernels/simd/q_tiles.h"
#include "quant/blocks.h"

#include <type_traits>

namespace brisk::kernels::avx512 {

using quant::BlockQ4_0;
using quant::BlockQ4_1;
using quant::BlockQ8_0;
using quant::BlockQ8_1;

namespace {

using ActGroup = simd::QActGroup<Vec>;
static_assert(sizeof(ActGroup) == 256);

using Kind = simd::QKind;

// Repacks one column of nb activation blocks into ngroups ActGroups (the
// last group zero-padded: zero activations and scales add nothing). Runs once
// per column per gemm call, so it is kept cheap: one 32-byte load and two
// 16-byte stores per block.
template <Kind K>
void pack_column(const uint8_t* src, int64_t nb, ActGroup* dst) {
  using B = std::conditional_t<K == Kind::q4_1, BlockQ8_1, BlockQ8_0>;
  const B* blocks = reinterpret_cast<const B*>(src);
  const int64_t ngroups = (nb + 3) / 4;
  // Lane i of the scale vector takes block i/4's value.
  const __m512i expand4 = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  for (int64_t g = 0; g < ngroups; ++g) {
    ActGroup& a = dst[g];
    const int n = nb - g * 4 < 4 ? static_cast<int>(nb - g * 4) : 4;
    alignas(16) float d[4] = {0, 0, 0, 0}, s[4] = {0, 0, 0, 0};
    for (int j = 0; j < 4; ++j) {
      __m256i q = _mm256_setzero_si256();
      if (j < n) {
        const B& b = blocks[g * 4 + j];
        q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
        d[j] = h2f(b.d);
        if constexpr (K == Kind::q4_1) s[j] = h2f(b.s);
      }
      _mm_store_si128(reinterpret_cast<__m128i*>(a.lo + 16 * j), _mm256_castsi256_si128(q));
      _mm_store_si128(reinterpret_cast<__m128i*>(a.hi + 16 * j), _mm256_extracti128_si256(q, 1));
    }
    _mm512_store_ps(a.d, _mm512_permutexvar_ps(expand4, _mm512_castps128_ps512(_mm_load_ps(d))));
    if constexpr (K == Kind::q4_1) {
      // s only in the first slot of each lane, so the 4 slots add it once.
      _mm512_store_ps(reinterpret_cast<float*>(a.extra),
                      _mm512_maskz_permutexvar_ps(0x1111, expand4, _mm512_castps128_ps512(_mm_load_ps(s))));
    } else {
      // Weights are stored with +offset, so dot = sum((w+off)*a) - off*sum(a).
      const __m512i ones = _mm512_set1_epi8(1);
      __m512i sum = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, _mm512_load_si512(a.lo));
      sum = _mm512_dpbusd_epi32(sum, ones, _mm512_load_si512(a.hi));
      const int shift = K == Kind::q4_0 ? 3 : 7;  // offset 8 or 128
      _mm512_store_si512(a.extra, _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(sum, shift)));
    }
  }
}

using WGroup = simd::QWeights<Vec>;

// Word indices for vpermw/vpermt2w (16-bit granularity is enough because
// every block starts on an even byte). Index bit 5 picks the second source.
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

// Q4_0 (18-byte blocks): block j's nibbles are words 9j+1..9j+8 of the group,
// read from loads at byte 0 (words 0..31) and byte 8 (words 4..35).
constexpr WordIdx kQ4_0Qs = make_idx([](int i) {
  const int src = 9 * (i / 8) + 1 + i % 8;
  return src < 32 ? src : 32 + src - 4;
});
// Scale of block j (word 9j) into words 4j..4j+3.
constexpr WordIdx kQ4_0D = make_idx([](int i) { return i < 16 ? 9 * (i / 4) : 0; });
// Q4_1 (20-byte blocks): nibbles at words 10j+2.., loads at byte 0 and 16.
constexpr WordIdx kQ4_1Qs = make_idx([](int i) {
  const int src = 10 * (i / 8) + 2 + i % 8;
  return src < 32 ? src : 32 + src - 8;
});
// Words 0..15: d of block i/4 (word 10j); words 16..31: m (word 10j+1).
constexpr WordIdx kQ4_1DM =
    make_idx([](int i) { return i < 16 ? 10 * (i / 4) : 10 * ((i - 16) / 4) + 1; });
// Q8_0 (34-byte blocks): scale words 17j from loads at byte 0 and 64 (word
// 32 onwards is the second source, so the index is the word number itself).
constexpr WordIdx kQ8_0D = make_idx([](int i) { return i < 16 ? 17 * (i / 4) : 0; });

// A load of n bytes at p, full or masked (masked-off bytes are zero and are
// not read, so the row's last group never touches memory past the row).
template <bool Tail>
inline __m512i load_bytes(const uint8_t* p, int64_t n) {
  if constexpr (Tail) {
    return _mm512_maskz_loadu_epi8(byte_mask(n), p);
  } else {
    (void)n;
    return _mm512_loadu_si512(p);
  }
}
template <bool Tail>
inline __m256i load_bytes256(const uint8_t* p, int64_t n) {
  if constexpr (Tail) {
    return _mm256_maskz_loadu_epi8(static_cast<__mmask32>(byte_mask(n < 32 ? n : 32)), p);
  } else {
    (void)n;
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  }
}

// Q4_0: 18-byte blocks, 4 of them = 72 bytes = words 0..35. Block j's scale is
// word 9j, its 16 nibble bytes words 9j+1..9j+8. Two loads (bytes 0..63 and
// 8..71) cover them; vpermt2w gathers the 4 x 16 nibble bytes into lanes.
struct Q4_0W {
  static constexpr int kBlockBytes = 18;
  template <bool Tail>
  static WGroup load(const uint8_t* p, int nbl) {
    const int64_t n = static_cast<int64_t>(nbl) * kBlockBytes;
    const __m512i z0 = load_bytes<Tail>(p, n);
    const __m512i z1 = load_bytes<Tail>(p + 8, n - 8);
    const __m512i q = _mm512_permutex2var_epi16(z0, idx(kQ4_0Qs), z1);
    const __m512i nib = _mm512_set1_epi8(0x0F);
    WGroup g;
    g.lo = _mm512_and_si512(q, nib);
    g.hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), nib);
    g.d = _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutexvar_epi16(idx(kQ4_0D), z0)));
    g.m = _mm512_setzero_ps();
    return g;
  }
};

// Q4_1: 20-byte blocks (d, m, 16 bytes), 4 = 80 bytes: loads at 0 and 16.
struct Q4_1W {
  static constexpr int kBlockBytes = 20;
  template <bool Tail>
  static WGroup load(const uint8_t* p, int nbl) {
    const int64_t n = static_cast<int64_t>(nbl) * kBlockBytes;
    const __m512i z0 = load_bytes<Tail>(p, n);
    const __m512i z1 = load_bytes<Tail>(p + 16, n - 16);
    const __m512i q = _mm512_permutex2var_epi16(z0, idx(kQ4_1Qs), z1);
    const __m512i nib = _mm512_set1_epi8(0x0F);
    WGroup g;
    g.lo = _mm512_and_si512(q, nib);
    g.hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), nib);
    const __m512i dm = _mm512_permutexvar_epi16(idx(kQ4_1DM), z0);
    g.d = _mm512_cvtph_ps(_mm512_castsi512_si256(dm));
    g.m = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(dm, 1));
    return g;
  }
};

// Q8_0: 34-byte blocks, 4 = 136 bytes. Each block's 32 weights are one ymm
// load; vshufi64x2 then splits halves into the lo/hi lane layout. The scales
// (words 0, 17, 34, 51) come from two more loads of the same cache lines.
struct Q8_0W {
  static constexpr int kBlockBytes = 34;
  template <bool Tail>
  static WGroup load(const uint8_t* p, int nbl) {
    const int64_t n = static_cast<int64_t>(nbl) * kBlockBytes;
    const __m512i z01 = _mm512_inserti64x4(_mm512_castsi256_si512(load_bytes256<Tail>(p + 2, n - 2)),
                                           load_bytes256<Tail>(p + 36, n - 36), 1);
    const __m512i z23 = _mm512_inserti64x4(_mm512_castsi256_si512(load_bytes256<Tail>(p + 70, n - 70)),
                                           load_bytes256<Tail>(p + 104, n - 104), 1);
    const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
    WGroup g;
    // Lanes (0,2) of z01 then (0,2) of z23: the first halves of blocks 0..3.
    g.lo = _mm512_xor_si512(_mm512_shuffle_i64x2(z01, z23, 0x88), bias);
    g.hi = _mm512_xor_si512(_mm512_shuffle_i64x2(z01, z23, 0xDD), bias);
    const __m512i s0 = load_bytes<Tail>(p, n);
    const __m512i s1 = load_bytes<Tail>(p + 64, n - 64);
    g.d = _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutex2var_epi16(s0, idx(kQ8_0D), s1)));
    g.m = _mm512_setzero_ps();
    return g;
  }
};

// The ISA's pieces of simd::gemm_q.
struct QOps {
  template <Kind K>
  static void pack_column(const uint8_t* src, int64_t nb, ActGroup* dst) {
    avx512::pack_column<K>(src, nb, dst);
  }
  // The int32 sums of one row's 4 blocks against one column's: two
  // vpdpbusd from the offset correction (Q4_1 has none: its minimum is a
  // float term).
  template <Kind K>
  static __m512i dot(const WGroup& w, __m512i alo, __m512i ahi, __m512i extra) {
    __m512i i = K == Kind::q4_1 ? _mm512_setzero_si512() : extra;
    i = _mm512_dpbusd_epi32(i, w.lo, alo);
    return _mm512_dpbusd_epi32(i, w.hi, ahi);
  }
};

// Tiles of 4 rows x 4 columns: 16 accumulators.
template <typename W, Kind K>
void gemm_q(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride,
            int ncols, float* out, size_t out_stride) {
  simd::gemm_q<Vec, QOps, W, K, 4, 4>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}

}  // namespace

void gemm_q8_0(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
               size_t act_stride, int ncols, float* out, size_t out_stride) {
  gemm_q<Q8_0W, Kind::q8_0>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}
void gemm_q4_0(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
               size_t act_stride, int ncols, float* out, size_t out_stride) {
  gemm_q<Q4_0W, Kind::q4_0>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}
void gemm_q4_1(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
               size_t act_stride, int ncols, float* out, size_t out_stride) {
  gemm_q<Q4_1W, Kind::q4_1>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}

}  // namespace brisk::kernels::avx512
