// SPDX-License-Identifier: MIT
// AVX2 kernels with AVX-VNNI (the VEX-encoded vpdpbusd of Alder Lake and
// later Intel client cores, and of Zen 5) over packed Q4_0, Q8_0, Q4_K and
// Q6_K weights (layout: packed.h), offered to the planner as variants of the
// AVX2 tables (kernels/variants.h, "avx2.packed.<type>.vnni") where CPUID
// reports AVX-VNNI. Compiled with -mavxvnni; nothing here runs unless the
// CPU has it.
//
// Why: the plain AVX2 kernels (avx2/matmul_packed*.cpp) multiply bytes with
// vpmaddubsw, whose int16 pairs saturate, so they sum in int16 under bounds
// and widen with vpmaddwd, and Q8_0 must flip its unsigned weights back to
// signed first. vpdpbusd sums four u8 x s8 products straight into int32,
// as the AVX-512 kernels do: per 4 bytes of a row, one instruction instead
// of two to four, which is what decode on an AVX2 core is short of.
//  - Q4_0 / Q8_0: one vpdpbusd per slice, half and column, from the block's
//    offset (-8 x or -128 x the activation sum, packed.h) in int32.
//  - Q4_K: each nibble load feeds both its sub-blocks (low nibbles 2j, high
//    nibbles 2j + 1 used in place as 16 x the weight, exact in int32); the
//    sub-block scales multiply the integer dots (vpmulld) and the mins of a
//    pair of sub-blocks go in one vpmaddwd, so the float work is one convert
//    and two FMAs per super-block.
//  - Q6_K: slices rebuilt as the plain kernel does, one vpdpbusd each; the
//    int8 sub-block scales multiply the integer dots, one FMA per super-block.
//  - F16 / BF16 batches in int16 (avx2/packed_i16_tiles.h): vpdpwssd, one
//    instruction for vpmaddwd and vpaddd.
#include "kernels/avx2vnni/vnni.h"

#include "kernels/avx2/common.h"
#include "kernels/avx2/packed_i16_tiles.h"
#include "kernels/avx2/packed_tiles.h"
#include "kernels/packed.h"
#include "kernels/variants.h"
#include "quant/blocks.h"

namespace brisk::kernels::avx2vnni {

using namespace brisk::kernels::avx2;
using quant::BlockQ8_0;
using quant::BlockQ8_K;

namespace {

inline __m256i dpbusd(__m256i acc, __m256i u8, __m256i s8) { return _mm256_dpbusd_avx_epi32(acc, u8, s8); }

// Q4_0 / Q8_0 against "Q8_0 with sums" activations.
// P: how a one-column tile prefetches; F: tiles of several columns (t0:
// each pair's lines, kPrefetchBytes ahead).
template <TensorType T, OnePrefetch P = OnePrefetch::t0_touch, OnePrefetch F = OnePrefetch::t0>
struct QTile : QSumsTile {
  static constexpr int kSlices = T == TensorType::Q4_0 ? 4 : 8;
  static constexpr int kShift = T == TensorType::Q4_0 ? 3 : 7;  // offset 8 or 128
  static constexpr size_t kPairBytes = 64 + 2 * kSlices * 64;

  // Halves h0 .. h0 + NH - 1 of group g times columns [c0, c0 + C).
  template <int NH, int C>
  void run_halves(int g, int h0, int c0) const {
    const uint8_t* grp = group(g);
    const uint8_t* qs[C];
    const float* ad[C];
    const int32_t* as[C];
    columns(c0, qs, ad, as);
    __m256 acc[NH][C];
    for (int i = 0; i < NH; ++i)
      for (int c = 0; c < C; ++c) acc[i][c] = _mm256_setzero_ps();
    const __m256i nib = _mm256_set1_epi8(0x0F);
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* pair = grp + static_cast<size_t>(b >> 1) * kPairBytes;
      if ((b & 1) == 0) {
        if constexpr (C == 1)
          prefetch_one_column<P, kPairBytes>(pair, b >> 1);
        else
          prefetch_one_column<F, kPairBytes>(pair, b >> 1);
      }
      const uint8_t* sl = pair + 64 + static_cast<size_t>(b & 1) * kSlices * 64 + 32 * h0;
      __m256i dot[NH][C];
      for (int c = 0; c < C; ++c) {
        const __m256i offset = _mm256_set1_epi32(-(as[c][b] << kShift));
        for (int i = 0; i < NH; ++i) dot[i][c] = offset;
      }
      const uint8_t* a_b[C];
      for (int c = 0; c < C; ++c) a_b[c] = qs[c] + static_cast<size_t>(b) * sizeof(BlockQ8_0);
      for (int m = 0; m < kSlices; ++m) {
        // Q4_0: slice m's low nibbles pair with activation bytes 4m.., its
        // high nibbles with 16 + 4m..; Q8_0: slice m with 4m...
        __m256i lo[NH], hi[NH];
        for (int i = 0; i < NH; ++i) {
          const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sl + 64 * m + 32 * i));
          if constexpr (T == TensorType::Q4_0) {
            lo[i] = _mm256_and_si256(q, nib);
            hi[i] = _mm256_and_si256(_mm256_srli_epi16(q, 4), nib);
          } else {
            lo[i] = q;
          }
        }
        for (int c = 0; c < C; ++c) {
          const __m256i x0 = _mm256_set1_epi32(load_i32(a_b[c] + 4 * m));
          for (int i = 0; i < NH; ++i) {
            dot[i][c] = dpbusd(dot[i][c], lo[i], x0);
            keep(dot[i][c]);
          }
          if constexpr (T == TensorType::Q4_0) {
            const __m256i x1 = _mm256_set1_epi32(load_i32(a_b[c] + 16 + 4 * m));
            for (int i = 0; i < NH; ++i) {
              dot[i][c] = dpbusd(dot[i][c], hi[i], x1);
              keep(dot[i][c]);
            }
          }
        }
      }
      __m256 dw[NH];
      for (int i = 0; i < NH; ++i)
        dw[i] = _mm256_cvtph_ps(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(pair + static_cast<size_t>(b & 1) * 32 + 16 * (h0 + i))));
      for (int c = 0; c < C; ++c) {
        const __m256 da = _mm256_set1_ps(ad[c][b]);
        for (int i = 0; i < NH; ++i)
          acc[i][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[i][c]), _mm256_mul_ps(dw[i], da), acc[i][c]);
      }
    }
    store(g, h0, c0, acc);
  }
};


// Q4_K against Q8_K activations.
template <OnePrefetch P = OnePrefetch::t0>
struct Q4KTile : KTile {
  template <int NH, int C>
  void run_halves(int g, int h0, int c0) const {
    const uint8_t* grp = group(g);
    const BlockQ8_K* a[C];
    columns(c0, a);
    __m256 acc[NH][C];
    for (int i = 0; i < NH; ++i)
      for (int c = 0; c < C; ++c) acc[i][c] = _mm256_setzero_ps();
    const __m256i nib = _mm256_set1_epi8(0x0F), six = _mm256_set1_epi32(63);
    for (int64_t b = 0; b < nsb; ++b) {
      const uint8_t* sb = grp + static_cast<size_t>(b) * kQ4KSuperBytes;
      prefetch_super<P, C, kQ4KSuperBytes>(sb, b, h0);
      // Scaled integer dots, per half and column: even sub-blocks plus the
      // odd ones (16 x the weight) shifted back after each pair.
      __m256i dot[NH][C];
      for (int i = 0; i < NH; ++i)
        for (int c = 0; c < C; ++c) dot[i][c] = _mm256_setzero_si256();
      for (int j = 0; j < 4; ++j) {
        const uint8_t* run = sb + kQ4KNibbles + 512 * j;
        __m256i e[NH][C], o[NH][C];
        for (int i = 0; i < NH; ++i)
          for (int c = 0; c < C; ++c) e[i][c] = o[i][c] = _mm256_setzero_si256();
        for (int m = 0; m < 8; ++m) {
          __m256i lo[NH], hi[NH];
          for (int i = 0; i < NH; ++i) {
            const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(run + 64 * m + 32 * (h0 + i)));
            lo[i] = _mm256_and_si256(q, nib);
            hi[i] = _mm256_andnot_si256(nib, q);
          }
          for (int c = 0; c < C; ++c) {
            const int8_t* x = a[c][b].qs + 64 * j + 4 * m;
            const __m256i xe = _mm256_set1_epi32(load_i32(x)), xo = _mm256_set1_epi32(load_i32(x + 32));
            for (int i = 0; i < NH; ++i) {
              e[i][c] = dpbusd(e[i][c], lo[i], xe);
              o[i][c] = dpbusd(o[i][c], hi[i], xo);
            }
          }
        }
        // Bounds: |o| <= 32 x 240 x 128 < 2^20, times a 6-bit scale: exact.
        for (int i = 0; i < NH; ++i) {
          const uint8_t* sc = sb + kQ4KScales + 16 * (2 * j) + 8 * (h0 + i);
          const __m256i sce = _mm256_and_si256(rows_u8(sc), six), sco = _mm256_and_si256(rows_u8(sc + 16), six);
          for (int c = 0; c < C; ++c)
            dot[i][c] = _mm256_add_epi32(dot[i][c], _mm256_add_epi32(_mm256_mullo_epi32(e[i][c], sce),
                                                                     _mm256_srai_epi32(_mm256_mullo_epi32(o[i][c], sco), 4)));
        }
      }
      // The mins: sub-blocks 2j and 2j + 1 as the int16 halves of each row's
      // slot (low 4 bits from their byte of nibbles, top 2 from bits 6-7 of
      // their scale bytes), one vpmaddwd against the column's sums per 32 of
      // the two sub-blocks.
      __m256i sums32[C];
      for (int c = 0; c < C; ++c) {
        const auto* bs = reinterpret_cast<const __m128i*>(a[c][b].bsums);
        sums32[c] = _mm256_broadcastsi128_si256(_mm_hadd_epi16(_mm_loadu_si128(bs), _mm_loadu_si128(bs + 1)));
      }
      __m256i mins[NH][C];
      for (int i = 0; i < NH; ++i)
        for (int c = 0; c < C; ++c) mins[i][c] = _mm256_setzero_si256();
      for (int j = 0; j < 4; ++j) {
        for (int i = 0; i < NH; ++i) {
          const int h = h0 + i;
          const __m256i lo = rows_u8(sb + kQ4KMinsLow + 16 * j + 8 * h);
          const __m256i rawe = rows_u8(sb + kQ4KScales + 16 * (2 * j) + 8 * h);
          const __m256i rawo = rows_u8(sb + kQ4KScales + 16 * (2 * j + 1) + 8 * h);
          const __m256i low = _mm256_and_si256(_mm256_or_si256(lo, _mm256_slli_epi32(lo, 12)), _mm256_set1_epi32(0x000F000F));
          const __m256i top = _mm256_and_si256(_mm256_or_si256(_mm256_srli_epi32(rawe, 2), _mm256_slli_epi32(rawo, 14)),
                                               _mm256_set1_epi32(0x00300030));
          const __m256i mn = _mm256_or_si256(low, top);
          for (int c = 0; c < C; ++c) {
            // Word j of each 128-bit lane: the sums per 32 of sub-blocks 2j, 2j + 1.
            __m256i pairj;
            switch (j) {
              case 0: pairj = _mm256_shuffle_epi32(sums32[c], 0x00); break;
              case 1: pairj = _mm256_shuffle_epi32(sums32[c], 0x55); break;
              case 2: pairj = _mm256_shuffle_epi32(sums32[c], 0xAA); break;
              default: pairj = _mm256_shuffle_epi32(sums32[c], 0xFF); break;
            }
            mins[i][c] = _mm256_add_epi32(mins[i][c], _mm256_madd_epi16(mn, pairj));
          }
        }
      }
      for (int i = 0; i < NH; ++i) {
        const uint8_t* dp = sb + 16 * (h0 + i);
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(dp)));
        const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(dp + 32)));
        for (int c = 0; c < C; ++c) {
          const __m256 da = _mm256_set1_ps(a[c][b].d);
          acc[i][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[i][c]), _mm256_mul_ps(d, da), acc[i][c]);
          acc[i][c] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(mins[i][c]), _mm256_mul_ps(dmin, da), acc[i][c]);
        }
      }
    }
    store_halves(out, out_stride, nrows, g, h0, c0, acc);
  }
};

// Q6_K against Q8_K activations: per run u of 32 weights, the 8 slices are
// rebuilt from a nibble slice and a 2-bit slice (unsigned q, value q - 32)
// and each sub-block of 16 (4 slices) gets its integer dot, which its int8
// row scale multiplies in integers (vpmulld). The -32 is removed per run
// with one vpmaddwd: the row's two scales x 32 as the int16 halves of its
// slot against the activation's two bsums. Bounds: a sub-block dot is at
// most 16 x 63 x 128, times a scale of at most 128, summed over 16
// sub-blocks: below 2^28. One float FMA per super-block.
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
      __m256i dot[NH][C];
      for (int i = 0; i < NH; ++i)
        for (int c = 0; c < C; ++c) dot[i][c] = _mm256_setzero_si256();
      _Pragma("GCC unroll 8") for (int u = 0; u < 8; ++u) {
        // Sub-block e (0, 1) of the run: 2u + e, slices 4e .. 4e + 3.
        for (int e = 0; e < 2; ++e) {
          __m256i part[NH][C];
          for (int i = 0; i < NH; ++i)
            for (int c = 0; c < C; ++c) part[i][c] = _mm256_setzero_si256();
          for (int m = 4 * e; m < 4 * e + 4; ++m) {
            __m256i q[NH];
            for (int i = 0; i < NH; ++i) {
              q[i] = q6_slice(sb, u, m, h0 + i);
            }
            for (int c = 0; c < C; ++c) {
              const __m256i x = _mm256_set1_epi32(load_i32(a[c][b].qs + 32 * u + 4 * m));
              for (int i = 0; i < NH; ++i) part[i][c] = dpbusd(part[i][c], q[i], x);
            }
          }
          for (int i = 0; i < NH; ++i) {
            const __m256i sc = _mm256_cvtepi8_epi32(
                _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sb + 32 + 16 * (2 * u + e) + 8 * (h0 + i))));
            for (int c = 0; c < C; ++c) dot[i][c] = _mm256_add_epi32(dot[i][c], _mm256_mullo_epi32(part[i][c], sc));
          }
        }
        for (int i = 0; i < NH; ++i) {
          const uint8_t* sp = sb + 32 + 16 * (2 * u) + 8 * (h0 + i);
          const __m128i s0 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sp));
          const __m128i s1 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sp + 16));
          const __m256i sw32 = _mm256_slli_epi16(_mm256_cvtepi8_epi16(_mm_unpacklo_epi8(s0, s1)), 5);
          for (int c = 0; c < C; ++c)
            dot[i][c] = _mm256_sub_epi32(
                dot[i][c], _mm256_madd_epi16(sw32, _mm256_set1_epi32(load_i32(a[c][b].bsums + 2 * u))));
        }
      }
      for (int i = 0; i < NH; ++i) {
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sb + 16 * (h0 + i))));
        for (int c = 0; c < C; ++c)
          acc[i][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[i][c]), _mm256_mul_ps(d, _mm256_set1_ps(a[c][b].d)),
                                      acc[i][c]);
      }
    }
    store_halves(out, out_stride, nrows, g, h0, c0, acc);
  }
};

// Tiles of up to 4 columns. Q4_0 / Q8_0 run both halves of a group in one
// pass at every width: their per-column state (an int32 dot and a float sum
// per half) spills little, and the weights are loaded and unpacked once per
// block. Q4_K, with three integer sums per half and column, keeps both
// halves together up to 2 columns and takes one half per pass beyond.
// (Measured with kernel_bench in L2: both faster than one half per pass
// from 2 columns on, at prompt widths too.)
// F serves 2-4 columns (one tile); wider passes, which read each group
// once per tile from cache after the first, prefetch each pair's lines.
template <TensorType T, OnePrefetch P, OnePrefetch F>
void gemm_q(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride, int ncols,
            float* out, size_t out_stride) {
  const QSumsTile base{k / 32, static_cast<const uint8_t*>(w), w_stride, nrows, static_cast<const uint8_t*>(act),
                       act_stride, q8_0_sums_offset(k), out, out_stride};
  if (ncols <= 4) {
    const QTile<T, P, F> t{base};
    drive<4>(GroupTile<QTile<T, P, F>, 4>{t}, nrows, ncols);
  } else {
    const QTile<T, P, OnePrefetch::t0> t{base};
    drive<4>(GroupTile<QTile<T, P, OnePrefetch::t0>, 4>{t}, nrows, ncols);
  }
}

template <OnePrefetch P>
void gemm_q4_k(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride, int ncols,
               float* out, size_t out_stride) {
  using Tile = Q4KTile<P>;
  const Tile t{{k / 256, static_cast<const uint8_t*>(w), w_stride, nrows, static_cast<const uint8_t*>(act), act_stride,
                out, out_stride}};
  drive<4>(GroupTile<Tile, 2>{t}, nrows, ncols);
}

template <OnePrefetch P>
void gemm_q6_k(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride, int ncols,
               float* out, size_t out_stride) {
  using Tile = Q6KTile<P>;
  const Tile t{{k / 256, static_cast<const uint8_t*>(w), w_stride, nrows, static_cast<const uint8_t*>(act), act_stride,
                out, out_stride}};
  drive<4>(GroupTile<Tile, 2>{t}, nrows, ncols);
}

template <TensorType T, OnePrefetch P, OnePrefetch F>
constexpr MatmulKernel kQKernel{TensorType::Q8_0, quantize_q8_0_sums, gemm_q<T, P, F>, q8_0_sums_bytes, true};
template <OnePrefetch P>
constexpr MatmulKernel kQ4KKernel{TensorType::Q8_K, quantize_q8_k, gemm_q4_k<P>, nullptr, true};
template <OnePrefetch P>
constexpr MatmulKernel kQ6KKernel{TensorType::Q8_K, quantize_q8_k, gemm_q6_k<P>, nullptr, true};

// Every column count, as the planner's baseline (KernelVariant::baseline:
// faster than the plain AVX2 tables in every measured class); prefetch
// schemes as the plain tables', for one column and, for Q4_0 / Q8_0, for
// 2-4 (.few). The baselines' 2-4 column tiles (a few sequences decoding
// together) prefetch as a one-column tile can: twice as far, with page
// touches, which read memory faster than each pair's lines (.few.t0, the
// plain tables' way) or non-temporal bursts (.few.nta) where measured.
template <TensorType T, OnePrefetch P, OnePrefetch F>
constexpr KernelVariant q_vnni(const char* name, int min_cols, int max_cols, bool baseline = false) {
  return {name, Isa::avx2, true, min_cols, max_cols, &kQKernel<T, P, F>, baseline};
}
constexpr OnePrefetch kT0Touch = OnePrefetch::t0_touch;
constexpr KernelVariant kQ4_0Variants[] = {
    q_vnni<TensorType::Q4_0, kT0Touch, OnePrefetch::far_touch>("avx2.packed.q4_0.vnni", 1, INT_MAX, true),
    q_vnni<TensorType::Q4_0, OnePrefetch::far_touch, OnePrefetch::t0>("avx2.packed.q4_0.vnni.far", 1, 1),
    q_vnni<TensorType::Q4_0, OnePrefetch::nta_touch, OnePrefetch::t0>("avx2.packed.q4_0.vnni.nta", 1, 1),
    q_vnni<TensorType::Q4_0, kT0Touch, OnePrefetch::nta_burst>("avx2.packed.q4_0.vnni.few.nta", 2, 4),
    q_vnni<TensorType::Q4_0, kT0Touch, OnePrefetch::t0>("avx2.packed.q4_0.vnni.few.t0", 2, 4),
};
constexpr KernelVariant kQ8_0Variants[] = {
    q_vnni<TensorType::Q8_0, kT0Touch, OnePrefetch::far_touch>("avx2.packed.q8_0.vnni", 1, INT_MAX, true),
    q_vnni<TensorType::Q8_0, OnePrefetch::nta_touch, OnePrefetch::t0>("avx2.packed.q8_0.vnni.nta", 1, 1),
    q_vnni<TensorType::Q8_0, kT0Touch, OnePrefetch::nta_burst>("avx2.packed.q8_0.vnni.few.nta", 2, 4),
    q_vnni<TensorType::Q8_0, kT0Touch, OnePrefetch::t0>("avx2.packed.q8_0.vnni.few.t0", 2, 4),
};
struct DpwssdDot {
  static __m256i add(__m256i acc, __m256i w, __m256i x) { return _mm256_dpwssd_avx_epi32(acc, w, x); }
};
template <typename L>
constexpr MatmulKernel kI16Kernel{TensorType::I16, quantize_packed_i16_act, gemm_i16_packed<L, DpwssdDot>,
                                  packed_i16_act_bytes, true};
constexpr KernelVariant kF16Variants[] = {
    {"avx2.packed.f16.i16.vnni", Isa::avx2, true, 5, INT_MAX, &kI16Kernel<F16>},
};
constexpr KernelVariant kBF16Variants[] = {
    {"avx2.packed.bf16.i16.vnni", Isa::avx2, true, 5, INT_MAX, &kI16Kernel<BF16>},
};
constexpr KernelVariant kQ4KVariants[] = {
    {"avx2.packed.q4_k.vnni", Isa::avx2, true, 1, INT_MAX, &kQ4KKernel<OnePrefetch::t0>, true},
    {"avx2.packed.q4_k.vnni.nta", Isa::avx2, true, 1, 1, &kQ4KKernel<OnePrefetch::nta_touch>},
};
constexpr KernelVariant kQ6KVariants[] = {
    {"avx2.packed.q6_k.vnni", Isa::avx2, true, 1, INT_MAX, &kQ6KKernel<OnePrefetch::t0>, true},
    {"avx2.packed.q6_k.vnni.touch", Isa::avx2, true, 1, 1, &kQ6KKernel<OnePrefetch::t0_touch>},
    {"avx2.packed.q6_k.vnni.nta", Isa::avx2, true, 1, 1, &kQ6KKernel<OnePrefetch::nta_touch>},
};

}  // namespace

const KernelVariant* packed_vnni_variants(TensorType t, int* n) {
  switch (t) {
    case TensorType::Q4_0: return listed(kQ4_0Variants, n);
    case TensorType::Q8_0: return listed(kQ8_0Variants, n);
    case TensorType::Q4_K: return listed(kQ4KVariants, n);
    case TensorType::Q6_K: return listed(kQ6KVariants, n);
    case TensorType::F16: return listed(kF16Variants, n);
    case TensorType::BF16: return listed(kBF16Variants, n);
    default: *n = 0; return nullptr;
  }
}

}  // namespace brisk::kernels::avx2vnni
