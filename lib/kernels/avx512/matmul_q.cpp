// SPDX-License-Identifier: MIT
// AVX-512 VNNI kernels for the 32-weight block types: Q8_0 and Q4_0 (against
// Q8_0 activations) and Q4_1 (against Q8_1).
//
// Layout: blocks are handled four at a time ("a group"), one block per 128-bit
// lane. Within a lane, int32 slot s accumulates weights 4s..4s+3 of the first
// half of the block plus 4s..4s+3 of the second half (two vpdpbusd). Keeping a
// block inside one lane means each group needs only one int->float convert and
// one FMA per (row, column) for four blocks, instead of one per block or per
// two blocks as in a row-major layout: the float work, not vpdpbusd, is what
// limits a tile otherwise.
//
// vpdpbusd multiplies unsigned by signed bytes. The weights are made the
// unsigned side: Q4 nibbles already are (0..15), Q8_0 weights get +128. The
// offset (8 or 128 times the activation sum) is subtracted by starting each
// block's int32 accumulator at -offset * (partial sums of the activations),
// which is computed once per column when the activations are repacked.
//
// Repacking: the gemm first rewrites each activation column into the lane
// layout (first halves of 4 blocks, second halves, scales widened to the 4
// slots, the offset correction). It is O(k) per column and amortised over all
// rows of the tile; the kernel's inner loop then reads only aligned vectors.
#include "kernels/avx512/common.h"
#include "quant/blocks.h"

#include <type_traits>

namespace brisk::kernels::avx512 {

using quant::BlockQ4_0;
using quant::BlockQ4_1;
using quant::BlockQ8_0;
using quant::BlockQ8_1;

namespace {

// One column's activations for 4 blocks, in lane layout.
struct alignas(64) ActGroup {
  int8_t lo[64];      // block j's qs[0..15] at 16j
  int8_t hi[64];      // block j's qs[16..31] at 16j
  float d[16];        // block j's scale in slots 4j..4j+3
  int32_t extra[16];  // Q4_0/Q8_0: int32 offset correction; Q4_1: float s at slot 4j, 0 elsewhere
};
static_assert(sizeof(ActGroup) == 256);

enum class Kind { q8_0, q4_0, q4_1 };

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

// One weight row's 4 blocks, unpacked: unsigned bytes in lane layout and the
// per-slot scales (and for Q4_1 the per-slot minimum).
struct WGroup {
  __m512i lo, hi;
  __m512 d, m;
};

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

template <typename W, Kind K>
struct QTile {
  int64_t ngroups;
  int last_nbl;  // blocks in the last group (1..4)
  const uint8_t* w;
  size_t w_stride;
  const ActGroup* act;  // ngroups per column, columns c_base, c_base + 1, ...
  int c_base;
  float* out;
  size_t out_stride;
  size_t pf_dist;  // prefetch this many bytes ahead of each row (next rows)

  template <int R, int C, bool Tail>
  inline void step(const uint8_t* const* wr, const ActGroup* const* ac, int64_t g, int nbl,
                   __m512 (&acc)[R][C]) const {
    WGroup wg[R];
    for (int r = 0; r < R; ++r) {
      prefetch_bytes<4 * W::kBlockBytes>(wr[r] + pf_dist + g * 4 * W::kBlockBytes);
      wg[r] = W::template load<Tail>(wr[r] + g * 4 * W::kBlockBytes, nbl);
    }
    for (int c = 0; c < C; ++c) {
      const ActGroup& a = ac[c][g];
      const __m512i alo = _mm512_load_si512(a.lo);
      const __m512i ahi = _mm512_load_si512(a.hi);
      const __m512 ad = _mm512_load_ps(a.d);
      const __m512i ax = _mm512_load_si512(a.extra);
      for (int r = 0; r < R; ++r) {
        __m512i i = K == Kind::q4_1 ? _mm512_setzero_si512() : ax;
        i = _mm512_dpbusd_epi32(i, wg[r].lo, alo);
        i = _mm512_dpbusd_epi32(i, wg[r].hi, ahi);
        acc[r][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(i), _mm512_mul_ps(wg[r].d, ad), acc[r][c]);
        if constexpr (K == Kind::q4_1)
          acc[r][c] = _mm512_fmadd_ps(wg[r].m, _mm512_castsi512_ps(ax), acc[r][c]);
      }
    }
  }

  template <int R, int C>
  void run(int r0, int c0) {
    const uint8_t* wr[R];
    const ActGroup* ac[C];
    for (int r = 0; r < R; ++r) wr[r] = w + static_cast<size_t>(r0 + r) * w_stride;
    for (int c = 0; c < C; ++c) ac[c] = act + static_cast<size_t>(c0 + c - c_base) * ngroups;
    __m512 acc[R][C];
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
    const int64_t full = last_nbl == 4 ? ngroups : ngroups - 1;
    for (int64_t g = 0; g < full; ++g) step<R, C, false>(wr, ac, g, 4, acc);
    if (full < ngroups) step<R, C, true>(wr, ac, full, last_nbl, acc);
    for (int c = 0; c < C; ++c)
      for (int r = 0; r < R; ++r) out[static_cast<size_t>(c0 + c) * out_stride + r0 + r] = hsum(acc[r][c]);
  }
};

constexpr int kColChunk = 32;

template <typename W, Kind K>
void gemm_q(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride,
            int ncols, float* out, size_t out_stride) {
  const int64_t nb = k / 32;
  const int64_t ngroups = (nb + 3) / 4;
  // Columns are repacked kColChunk at a time so the packed activations stay
  // cache-sized however large the batch is.
  const int chunk = ncols < kColChunk ? ncols : kColChunk;
  auto* packed = static_cast<ActGroup*>(scratch(static_cast<size_t>(ngroups) * chunk * sizeof(ActGroup)));
  QTile<W, K> t{ngroups, static_cast<int>(nb - (ngroups - 1) * 4), static_cast<const uint8_t*>(w), w_stride, packed, 0, out, out_stride,
                prefetch_distance(ncols, w_stride)};
  for (int c0 = 0; c0 < ncols; c0 += chunk) {
    const int c1 = ncols - c0 < chunk ? ncols : c0 + chunk;
    for (int c = c0; c < c1; ++c)
      pack_column<K>(static_cast<const uint8_t*>(act) + static_cast<size_t>(c) * act_stride, nb,
                     packed + static_cast<size_t>(c - c0) * ngroups);
    t.c_base = c0;
    if (ncols == 1) {
      for_each_tile<1, 1>(t, nrows, c0, c1, w_stride);
    } else {
      for_each_tile<4, 4>(t, nrows, c0, c1, w_stride);
    }
  }
}

}  // namespace

void quantize_q8_0(const float* x, void* out, int64_t k) {
  auto* y = static_cast<BlockQ8_0*>(out);
  for (int64_t b = 0; b < k / 32; ++b) {
    __m512i q0, q1;
    const float d = q8_block(x + b * 32, &q0, &q1);
    y[b].d = f2h(d);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y[b].qs), _mm512_cvtepi32_epi8(q0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y[b].qs + 16), _mm512_cvtepi32_epi8(q1));
  }
}

void quantize_q8_1(const float* x, void* out, int64_t k) {
  auto* y = static_cast<BlockQ8_1*>(out);
  for (int64_t b = 0; b < k / 32; ++b) {
    __m512i q0, q1;
    const float d = q8_block(x + b * 32, &q0, &q1);
    const int sum = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
    y[b].d = f2h(d);
    // ggml rounds s from the unrounded d.
    y[b].s = f2h(static_cast<float>(sum) * d);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y[b].qs), _mm512_cvtepi32_epi8(q0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y[b].qs + 16), _mm512_cvtepi32_epi8(q1));
  }
}

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
