// SPDX-License-Identifier: MIT
// AVX2 kernels over packed Q4_0 / Q8_0 weights (layout: packed.h), for
// machines without AVX-512: the same layout the AVX-512 VNNI kernels read,
// so one packing serves both.
//
// A 16-row group's slice vector (64 bytes: row r's 4 bytes at 4r) is two
// ymm here, rows 0-7 and rows 8-15 (the group's two "halves"). Per slice,
// column c's 4 activation bytes are broadcast to every 32-bit slot, and
// vpmaddubsw (unsigned weight byte x signed activation byte, adjacent pairs
// summed to int16) advances 8 rows' dot products at once; vpmaddwd with ones
// then sums each slot's two int16 into row r's int32 in slot r. One convert
// and one FMA per half, column and block finish 8 rows, and the results are
// stored as consecutive outputs: no horizontal sums.
//
// There is no vpdpbusd on most AVX2 machines, so the int16 intermediate
// decides the arithmetic:
//  - Q4_0: nibbles 0..15 times activations |a| <= 128 give pairs of at
//    most 3840, and all 8 slices of a block are summed in int16 before the
//    one vpmaddwd. The -8 offset starts each int16 lane at -4 x (sum of the
//    block's activations), so the lane pair sums to -8 x sum: every lane
//    then holds sum (n_i - 4) a_i over its 16 activations minus 4 x the sum
//    of the other 16, at most 16 x 15 x 128 = 30720 in magnitude, so the
//    wrapping int16 adds give the exact result with no int32 correction.
//  - Q8_0: the layout stores q + 128, which against a signed byte can
//    overflow a vpmaddubsw pair (2 x 255 x 127). The kernel flips the bytes
//    back to signed q and uses |q| x sign(a, q), as ggml's AVX2 code does
//    (pairs at most 2 x 128 x 127); each slice then needs its own vpmaddwd,
//    and no offset is left to remove.
#include "kernels/avx2/common.h"
#include "kernels/avx2/packed_tiles.h"
#include "kernels/packed.h"
#include "kernels/variants.h"
#include "quant/blocks.h"

namespace brisk::kernels::avx2 {

using quant::BlockQ8_0;

namespace {

// One column's default prefetch: the pair's lines and pages (OnePrefetch).
// F: how tiles of several columns prefetch (t0: each pair's lines,
// kPrefetchBytes ahead).
template <TensorType T, OnePrefetch P = OnePrefetch::t0_touch, OnePrefetch F = OnePrefetch::t0>
struct PackedTile : QSumsTile {
  static constexpr int kSlices = T == TensorType::Q4_0 ? 4 : 8;
  static constexpr size_t kPairBytes = 64 + 2 * kSlices * 64;

  // Halves h0 .. h0 + NH - 1 of group g (rows 16g + 8h ..) times columns
  // [c0, c0 + C).
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
    const __m256i ones16 = _mm256_set1_epi16(1);
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* pair = grp + static_cast<size_t>(b >> 1) * kPairBytes;
      if ((b & 1) == 0) {
        if constexpr (C == 1)
          prefetch_one_column<P, kPairBytes>(pair, b >> 1);
        else
          prefetch_one_column<F, kPairBytes>(pair, b >> 1);
      }
      const uint8_t* sl = pair + 64 + static_cast<size_t>(b & 1) * kSlices * 64 + 32 * h0;
      __m256 dw[NH];
      for (int i = 0; i < NH; ++i)
        dw[i] = _mm256_cvtph_ps(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(pair + static_cast<size_t>(b & 1) * 32 + 16 * (h0 + i))));
      __m256i dot[NH][C];
      for (int c = 0; c < C; ++c) {
        const __m256i init = T == TensorType::Q4_0 ? _mm256_set1_epi16(static_cast<int16_t>(-4 * as[c][b]))
                                                   : _mm256_setzero_si256();
        for (int i = 0; i < NH; ++i) dot[i][c] = init;
      }
      const uint8_t* a_b[C];
      for (int c = 0; c < C; ++c) a_b[c] = qs[c] + static_cast<size_t>(b) * sizeof(BlockQ8_0);
      if constexpr (T == TensorType::Q4_0) {
        const __m256i nib = _mm256_set1_epi8(0x0F);
        for (int m = 0; m < 4; ++m) {
          __m256i lo[NH], hi[NH];
          for (int i = 0; i < NH; ++i) {
            const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sl + 64 * m + 32 * i));
            lo[i] = _mm256_and_si256(q, nib);
            hi[i] = _mm256_and_si256(_mm256_srli_epi16(q, 4), nib);
          }
          for (int c = 0; c < C; ++c) {
            const __m256i x0 = _mm256_set1_epi32(load_i32(a_b[c] + 4 * m));
            const __m256i x1 = _mm256_set1_epi32(load_i32(a_b[c] + 16 + 4 * m));
            for (int i = 0; i < NH; ++i) {
              dot[i][c] = _mm256_add_epi16(dot[i][c], _mm256_add_epi16(_mm256_maddubs_epi16(lo[i], x0),
                                                                        _mm256_maddubs_epi16(hi[i], x1)));
              keep(dot[i][c]);
            }
          }
        }
        for (int i = 0; i < NH; ++i)
          for (int c = 0; c < C; ++c) dot[i][c] = _mm256_madd_epi16(dot[i][c], ones16);
      } else {
        const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
        // Unrolled by request: with keep() below GCC leaves it rolled.
        _Pragma("GCC unroll 8") for (int m = 0; m < 8; ++m) {
          __m256i q[NH], aq[NH];
          for (int i = 0; i < NH; ++i) {
            q[i] = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sl + 64 * m + 32 * i)), flip);
            aq[i] = _mm256_abs_epi8(q[i]);
          }
          for (int c = 0; c < C; ++c) {
            const __m256i x = _mm256_set1_epi32(load_i32(a_b[c] + 4 * m));
            for (int i = 0; i < NH; ++i) {
              dot[i][c] = _mm256_add_epi32(
                  dot[i][c], _mm256_madd_epi16(_mm256_maddubs_epi16(aq[i], _mm256_sign_epi8(x, q[i])), ones16));
              keep(dot[i][c]);
            }
          }
        }
      }
      for (int c = 0; c < C; ++c) {
        const __m256 da = _mm256_set1_ps(ad[c][b]);
        for (int i = 0; i < NH; ++i)
          acc[i][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[i][c]), _mm256_mul_ps(dw[i], da), acc[i][c]);
      }
    }
    store(g, h0, c0, acc);
  }
};

template <TensorType T, OnePrefetch P = OnePrefetch::t0_touch, OnePrefetch F = OnePrefetch::t0>
void gemm_packed(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride, int ncols,
                 float* out, size_t out_stride) {
  using Tile = PackedTile<T, P, F>;
  const Tile t{{k / 32, static_cast<const uint8_t*>(w), w_stride, nrows, static_cast<const uint8_t*>(act),
                            act_stride, q8_0_sums_offset(k), out, out_stride}};
  // Tile widths by measurement (kernel_bench, 256 rows like the engine's
  // pieces, 8-64 columns; figures in the commit message): Q4_0 keeps both
  // halves of up to 4 columns in one pass (the nibbles are unpacked once per
  // block for 16 rows); Q8_0, with twice the weight registers, does better
  // with one half of up to 6 columns per pass.
  if constexpr (T == TensorType::Q4_0) {
    drive<4>(GroupTile<Tile, 4>{t}, nrows, ncols);
  } else {
    drive<6>(GroupTile<Tile, 2>{t}, nrows, ncols);
  }
}

}  // namespace

void gemm_q4_0_packed(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride,
                      int ncols, float* out, size_t out_stride) {
  gemm_packed<TensorType::Q4_0>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}
void gemm_q8_0_packed(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride,
                      int ncols, float* out, size_t out_stride) {
  gemm_packed<TensorType::Q8_0>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}

namespace {
// The one-column prefetch schemes other than the default, as variants for
// the planner (kernels/variants.h): for one column, and for 2-4 columns (a
// few sequences decoding together) prefetching as one column does.
template <TensorType T, OnePrefetch P, OnePrefetch F = OnePrefetch::t0>
constexpr MatmulKernel kQKernel{TensorType::Q8_0, quantize_q8_0_sums, gemm_packed<T, P, F>, q8_0_sums_bytes, true};
template <TensorType T, OnePrefetch P>
constexpr KernelVariant q_one(const char* name) {
  return {name, Isa::avx2, true, 1, 1, &kQKernel<T, P>};
}
template <TensorType T, OnePrefetch F>
constexpr KernelVariant q_few(const char* name) {
  return {name, Isa::avx2, true, 2, 4, &kQKernel<T, OnePrefetch::t0_touch, F>};
}
constexpr KernelVariant kQ4_0Variants[] = {
    q_one<TensorType::Q4_0, OnePrefetch::t0>("avx2.packed.q4_0.t0"),
    q_one<TensorType::Q4_0, OnePrefetch::nta_touch>("avx2.packed.q4_0.nta"),
    q_one<TensorType::Q4_0, OnePrefetch::far_touch>("avx2.packed.q4_0.far"),
    q_one<TensorType::Q4_0, OnePrefetch::hw>("avx2.packed.q4_0.hw"),
    q_few<TensorType::Q4_0, OnePrefetch::nta_burst>("avx2.packed.q4_0.few.nta"),
    q_few<TensorType::Q4_0, OnePrefetch::far_touch>("avx2.packed.q4_0.few.far"),
};
constexpr KernelVariant kQ8_0Variants[] = {
    q_one<TensorType::Q8_0, OnePrefetch::t0>("avx2.packed.q8_0.t0"),
    q_one<TensorType::Q8_0, OnePrefetch::nta_touch>("avx2.packed.q8_0.nta"),
    q_one<TensorType::Q8_0, OnePrefetch::far_touch>("avx2.packed.q8_0.far"),
    q_one<TensorType::Q8_0, OnePrefetch::hw>("avx2.packed.q8_0.hw"),
    q_few<TensorType::Q8_0, OnePrefetch::nta_burst>("avx2.packed.q8_0.few.nta"),
    q_few<TensorType::Q8_0, OnePrefetch::far_touch>("avx2.packed.q8_0.few.far"),
};
}  // namespace

const KernelVariant* packed_q_decode_variants(TensorType t, int* n) {
  switch (t) {
    case TensorType::Q4_0: return listed(kQ4_0Variants, n);
    case TensorType::Q8_0: return listed(kQ8_0Variants, n);
    default: *n = 0; return nullptr;
  }
}

}  // namespace brisk::kernels::avx2
