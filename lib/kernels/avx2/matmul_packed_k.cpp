// SPDX-License-Identifier: MIT
// AVX2 kernels over packed Q4_K / Q6_K weights (layout: packed.h) against
// Q8_K activations: the halves, broadcasts and stores of matmul_packed.cpp,
// per 256-weight super-block.
//
// Q4_K: a sub-block of 32 is 8 nibble slices; their vpmaddubsw pairs
// (at most 2 x 15 x 128) sum in int16 over all 8, and one vpmaddwd against
// the row's 6-bit scale, placed in both int16 halves of its 32-bit slot,
// gives scale x dot in int32. A run of 32 bytes per row holds two
// sub-blocks (low and high nibbles), so each line is loaded once for both.
// The mins term is one vpmaddwd per pair of sub-blocks: the two mins as the
// int16 halves of a row's slot against the activation's two sums per 32.
// Float work: two FMAs per super-block (d and dmin).
//
// Q6_K: weights are unsigned 6-bit q (value q - 32), rebuilt per slice
// from a nibble slice and a 2-bit slice. A vpmaddubsw pair reaches
// 2 x 63 x 128, so only two slices sum in int16 before the vpmaddwd that
// applies the sub-block's int8 scale; the -32 is removed per super-block
// with the activation's bsums (one vpmaddwd per two sub-blocks, the row's
// two scales as the int16 halves of its slot).
#include "kernels/avx2/common.h"
#include "kernels/avx2/packed_tiles.h"
#include "kernels/packed.h"
#include "kernels/variants.h"
#include "quant/blocks.h"

namespace brisk::kernels::avx2 {

using quant::BlockQ8_K;

namespace {

// A 16-bit value per slot copied into both halves of its slot.
inline __m256i both_halves(__m256i v) { return _mm256_or_si256(v, _mm256_slli_epi32(v, 16)); }

// Sub-block s's 6-bit scales of half h of a Q4_K super-block, in both int16
// halves of each row's slot (a scale byte's bits 6-7 are its min's top
// bits, packed.h).
inline __m256i q4k_scales(const uint8_t* sb, int s, int h) {
  return both_halves(_mm256_and_si256(rows_u8(sb + kQ4KScales + 16 * s + 8 * h), _mm256_set1_epi32(63)));
}

// The mins of sub-blocks 2j and 2j + 1 of half h of a Q4_K super-block as
// the int16 halves of each row's slot. Both mins' low 4 bits are the
// nibbles of one byte: (b | b << 12) puts them at bits 0-3 and 16-19; their
// top bits (bits 6-7 of the scale bytes, packed.h) go to 4-5 and 20-21.
inline __m256i q4k_mins_pair(const uint8_t* sb, int j, int h) {
  const __m256i se = rows_u8(sb + kQ4KScales + 16 * (2 * j) + 8 * h);
  const __m256i so = rows_u8(sb + kQ4KScales + 16 * (2 * j + 1) + 8 * h);
  const __m256i ml = rows_u8(sb + kQ4KMinsLow + 16 * j + 8 * h);
  const __m256i low = _mm256_and_si256(_mm256_or_si256(ml, _mm256_slli_epi32(ml, 12)), _mm256_set1_epi32(0x000F000F));
  const __m256i top = _mm256_and_si256(_mm256_or_si256(_mm256_srli_epi32(se, 2), _mm256_slli_epi32(so, 14)),
                                       _mm256_set1_epi32(0x00300030));
  return _mm256_or_si256(low, top);
}

// The activation's sums per 32 of a super-block: sub-blocks 2j and 2j + 1
// as the int16 halves of pairs[j] (bsums are sums per 16), to multiply
// q4k_mins_pair.
inline void sums_per_32(const BlockQ8_K& a, int32_t (&pairs)[4]) {
  const auto* bs = reinterpret_cast<const __m128i*>(a.bsums);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(pairs), _mm_hadd_epi16(_mm_loadu_si128(bs), _mm_loadu_si128(bs + 1)));
}

template <OnePrefetch P = OnePrefetch::t0>
struct Q4KTile : KTile {
  // One column, both halves in one pass (gemm_k), run by run: each line of
  // a run is loaded once and feeds both of its sub-blocks (low nibbles 2j,
  // high nibbles 2j + 1). Wider tiles run the same order one half at a
  // time (run_half): for both halves their accumulators would not fit the
  // 16 registers.
  void run_one(int g, int c0) const {
    const BlockQ8_K* a = reinterpret_cast<const BlockQ8_K*>(act + static_cast<size_t>(c0) * act_stride);
    const uint8_t* grp = group(g);
    __m256 acc[2][1] = {{_mm256_setzero_ps()}, {_mm256_setzero_ps()}};
    const __m256i nib = _mm256_set1_epi8(0x0F);
    for (int64_t b = 0; b < nsb; ++b) {
      const uint8_t* sb = grp + static_cast<size_t>(b) * kQ4KSuperBytes;
      prefetch_super<P, 1, kQ4KSuperBytes>(sb, b, 0);
      int32_t pair_sums[4];
      sums_per_32(a[b], pair_sums);
      __m256i sumi[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
      __m256i summ[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
      _Pragma("GCC unroll 4") for (int j = 0; j < 4; ++j) {
        const uint8_t* run = sb + kQ4KNibbles + 512 * j;
        const int8_t* x = a[b].qs + 64 * j;
        __m256i even[2], odd[2];  // per half, int16 dots of sub-blocks 2j and 2j + 1
        for (int m = 0; m < 8; ++m) {
          const __m256i xe = _mm256_set1_epi32(load_i32(x + 4 * m));
          const __m256i xo = _mm256_set1_epi32(load_i32(x + 32 + 4 * m));
          for (int h = 0; h < 2; ++h) {
            const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(run + 64 * m + 32 * h));
            const __m256i pe = _mm256_maddubs_epi16(_mm256_and_si256(v, nib), xe);
            const __m256i po = _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v, 4), nib), xo);
            if (m == 0) {
              even[h] = pe, odd[h] = po;
            } else {
              even[h] = _mm256_add_epi16(even[h], pe), odd[h] = _mm256_add_epi16(odd[h], po);
            }
            keep(even[h]), keep(odd[h]);
          }
        }
        const __m256i pair = _mm256_set1_epi32(pair_sums[j]);
        for (int h = 0; h < 2; ++h) {
          sumi[h] = _mm256_add_epi32(sumi[h], _mm256_madd_epi16(even[h], q4k_scales(sb, 2 * j, h)));
          sumi[h] = _mm256_add_epi32(sumi[h], _mm256_madd_epi16(odd[h], q4k_scales(sb, 2 * j + 1, h)));
          summ[h] = _mm256_add_epi32(summ[h], _mm256_madd_epi16(q4k_mins_pair(sb, j, h), pair));
        }
      }
      const __m256 da = _mm256_set1_ps(a[b].d);
      for (int h = 0; h < 2; ++h) {
        const uint8_t* dp = sb + 16 * h;
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(dp)));
        const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(dp + 32)));
        acc[h][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[h]), _mm256_mul_ps(d, da), acc[h][0]);
        acc[h][0] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(summ[h]), _mm256_mul_ps(dmin, da), acc[h][0]);
      }
    }
    store_halves(out, out_stride, nrows, g, 0, c0, acc);
  }

  // GroupTile's entry: both halves of one column (run_one), or one half.
  template <int NH, int C>
  void run_halves(int g, int h0, int c0) const {
    if constexpr (NH == 2) {
      static_assert(C == 1, "both halves in one pass only for one column (gemm_k)");
      run_one(g, c0);
    } else {
      run_half<C>(g, h0, c0);
    }
  }

  // Half h0 (8 rows) of group g times C columns, run by run as run_one: each
  // line of the half is loaded and split into its two nibble slices once,
  // for both sub-blocks and every column. The mins term is summed after the
  // runs, so that the runs' accumulators (two int16 dots per column) and
  // each column's sum fit the 16 registers up to kColTile columns. keep()
  // holds each column's sums in place: without it GCC hoists the
  // activation broadcasts of whole runs and spills them.
  template <int C>
  void run_half(int g, int h0, int c0) const {
    const uint8_t* grp = group(g);
    const BlockQ8_K* a[C];
    columns(c0, a);
    __m256 acc[1][C];
    for (int c = 0; c < C; ++c) acc[0][c] = _mm256_setzero_ps();
    const __m256i nib = _mm256_set1_epi8(0x0F);
    for (int64_t b = 0; b < nsb; ++b) {
      const uint8_t* sb = grp + static_cast<size_t>(b) * kQ4KSuperBytes;
      prefetch_super<P, C, kQ4KSuperBytes>(sb, b, h0);
      __m256i sumi[C];
      for (int c = 0; c < C; ++c) sumi[c] = _mm256_setzero_si256();
      for (int j = 0; j < 4; ++j) {
        const uint8_t* run = sb + kQ4KNibbles + 512 * j;
        __m256i even[C], odd[C];
        for (int m = 0; m < 8; ++m) {
          const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(run + 64 * m + 32 * h0));
          const __m256i lo = _mm256_and_si256(v, nib), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), nib);
          for (int c = 0; c < C; ++c) {
            const int8_t* x = a[c][b].qs + 64 * j + 4 * m;
            const __m256i pe = _mm256_maddubs_epi16(lo, _mm256_set1_epi32(load_i32(x)));
            const __m256i po = _mm256_maddubs_epi16(hi, _mm256_set1_epi32(load_i32(x + 32)));
            if (m == 0) {
              even[c] = pe, odd[c] = po;
            } else {
              even[c] = _mm256_add_epi16(even[c], pe), odd[c] = _mm256_add_epi16(odd[c], po);
            }
            keep(even[c]), keep(odd[c]);
          }
        }
        const __m256i se = q4k_scales(sb, 2 * j, h0), so = q4k_scales(sb, 2 * j + 1, h0);
        for (int c = 0; c < C; ++c) {
          sumi[c] = _mm256_add_epi32(sumi[c], _mm256_add_epi32(_mm256_madd_epi16(even[c], se), _mm256_madd_epi16(odd[c], so)));
          keep(sumi[c]);
        }
      }
      // The mins term, pair by pair as run_one's.
      int32_t pair_sums[C][4];
      __m256i summ[C];
      for (int c = 0; c < C; ++c) sums_per_32(a[c][b], pair_sums[c]), summ[c] = _mm256_setzero_si256();
      for (int j = 0; j < 4; ++j) {
        const __m256i mn = q4k_mins_pair(sb, j, h0);
        for (int c = 0; c < C; ++c)
          summ[c] = _mm256_add_epi32(summ[c], _mm256_madd_epi16(mn, _mm256_set1_epi32(pair_sums[c][j])));
      }
      const uint8_t* dp = sb + 16 * h0;
      const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(dp)));
      const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(dp + 32)));
      for (int c = 0; c < C; ++c) {
        const __m256 da = _mm256_set1_ps(a[c][b].d);
        acc[0][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[c]), _mm256_mul_ps(d, da), acc[0][c]);
        acc[0][c] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(summ[c]), _mm256_mul_ps(dmin, da), acc[0][c]);
      }
    }
    store_halves(out, out_stride, nrows, g, h0, c0, acc);
  }
};

template <OnePrefetch P = OnePrefetch::t0>
struct Q6KTile : KTile {
  template <int NH, int C>
  void run_halves(int g, int h0, int c0) const {
    const uint8_t* grp = group(g);
    const BlockQ8_K* a[C];
    columns(c0, a);
    __m256 acc[NH][C];
    for (int i = 0; i < NH; ++i)
      for (int c = 0; c < C; ++c) acc[i][c] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nsb; ++b) {
      const uint8_t* sb = grp + static_cast<size_t>(b) * kQ6KSuperBytes;
      prefetch_super<P, C, kQ6KSuperBytes>(sb, b, h0);
      __m256i sumi[NH][C], offs[NH][C];
      for (int i = 0; i < NH; ++i)
        for (int c = 0; c < C; ++c) sumi[i][c] = offs[i][c] = _mm256_setzero_si256();
      _Pragma("GCC unroll 8") for (int u = 0; u < 8; ++u) {
        // Sub-blocks 2u and 2u + 1 (slices 0-3 and 4-7 of this run of 32):
        // row r's scale in both int16 halves of slot r (sc[0], sc[1]), and
        // the two scales as the halves (sw, against the bsums).
        __m256i sc[NH][2], sw[NH];
        for (int i = 0; i < NH; ++i) {
          const uint8_t* sp = sb + 32 + 16 * (2 * u) + 8 * (h0 + i);
          const __m128i s0 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sp));
          const __m128i s1 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sp + 16));
          sc[i][0] = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(s0, s0));
          sc[i][1] = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(s1, s1));
          sw[i] = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(s0, s1));
        }
        for (int m = 0; m < 8; m += 2) {
          __m256i q[NH][2];
          for (int i = 0; i < NH; ++i)
            for (int e = 0; e < 2; ++e) {
              q[i][e] = q6_slice(sb, u, m + e, h0 + i);
            }
          for (int c = 0; c < C; ++c) {
            const int8_t* x = a[c][b].qs + 32 * u + 4 * m;
            const __m256i x0 = _mm256_set1_epi32(load_i32(x)), x1 = _mm256_set1_epi32(load_i32(x + 4));
            for (int i = 0; i < NH; ++i) {
              const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(q[i][0], x0), _mm256_maddubs_epi16(q[i][1], x1));
              sumi[i][c] = _mm256_add_epi32(sumi[i][c], _mm256_madd_epi16(p, sc[i][m / 4]));
              keep(sumi[i][c]);
            }
          }
        }
        for (int c = 0; c < C; ++c) {
          const __m256i bs = _mm256_set1_epi32(load_i32(a[c][b].bsums + 2 * u));
          for (int i = 0; i < NH; ++i) {
            offs[i][c] = _mm256_add_epi32(offs[i][c], _mm256_madd_epi16(sw[i], bs));
            keep(offs[i][c]);
          }
        }
      }
      for (int i = 0; i < NH; ++i) {
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sb + 16 * (h0 + i))));
        for (int c = 0; c < C; ++c) {
          const __m256i total = _mm256_sub_epi32(sumi[i][c], _mm256_slli_epi32(offs[i][c], 5));
          acc[i][c] =
              _mm256_fmadd_ps(_mm256_cvtepi32_ps(total), _mm256_mul_ps(d, _mm256_set1_ps(a[c][b].d)), acc[i][c]);
        }
      }
    }
    store_halves(out, out_stride, nrows, g, h0, c0, acc);
  }
};

// Tiles: one column reads both halves in one pass; wider tiles one half
// of up to 6 columns per pass (per-column accumulators for both halves do
// not fit the 16 ymm registers). Chosen by kernel_bench against both
// halves of 2-4 columns and one half of 3-4 (commit message).
template <class Tile>
void gemm_k(const Tile& t, int nrows, int ncols) {
  drive<6>(GroupTile<Tile, 1>{t}, nrows, ncols);
}

template <class Tile>
void gemm_k_packed(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride,
                   int ncols, float* out, size_t out_stride) {
  const Tile t{{k / 256, static_cast<const uint8_t*>(w), w_stride, nrows, static_cast<const uint8_t*>(act),
                act_stride, out, out_stride}};
  gemm_k(t, nrows, ncols);
}

// The one-column prefetch schemes other than the default, as variants for
// the planner (kernels/variants.h); each is offered for one column only.
template <class Tile>
constexpr MatmulKernel kKKernel{TensorType::Q8_K, quantize_q8_k, gemm_k_packed<Tile>, nullptr, true};
template <class Tile>
constexpr KernelVariant k_one(const char* name) {
  return {name, Isa::avx2, true, 1, 1, &kKKernel<Tile>};
}
constexpr KernelVariant kQ4KVariants[] = {
    k_one<Q4KTile<OnePrefetch::t0_touch>>("avx2.packed.q4_k.touch"),
    k_one<Q4KTile<OnePrefetch::nta_touch>>("avx2.packed.q4_k.nta"),
    k_one<Q4KTile<OnePrefetch::far_touch>>("avx2.packed.q4_k.far"),
    k_one<Q4KTile<OnePrefetch::hw>>("avx2.packed.q4_k.hw"),
};
constexpr KernelVariant kQ6KVariants[] = {
    k_one<Q6KTile<OnePrefetch::t0_touch>>("avx2.packed.q6_k.touch"),
    k_one<Q6KTile<OnePrefetch::nta_touch>>("avx2.packed.q6_k.nta"),
    k_one<Q6KTile<OnePrefetch::far_touch>>("avx2.packed.q6_k.far"),
    k_one<Q6KTile<OnePrefetch::hw>>("avx2.packed.q6_k.hw"),
};

}  // namespace

void gemm_q4_k_packed(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride,
                      int ncols, float* out, size_t out_stride) {
  gemm_k_packed<Q4KTile<>>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}
void gemm_q6_k_packed(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride,
                      int ncols, float* out, size_t out_stride) {
  gemm_k_packed<Q6KTile<>>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}

const KernelVariant* packed_k_decode_variants(TensorType t, int* n) {
  switch (t) {
    case TensorType::Q4_K: return listed(kQ4KVariants, n);
    case TensorType::Q6_K: return listed(kQ6KVariants, n);
    default: *n = 0; return nullptr;
  }
}

}  // namespace brisk::kernels::avx2
