// SPDX-License-Identifier: MIT
// AVX-512 kernels over packed F16 / BF16 weights (layout: packed.h).
//
// One 64-byte load is 16 rows x one pair of values. Two ways to use it:
//  - Exact (fewer than kPackedFloatBatchCols columns: decode, small batches,
//    bound by memory; up to 4 row groups read side by side, see gemm_exact). Widened to two f32 vectors (rows 0-7 and 8-15, each
//    lane one row's value 2p or 2p+1), each FMA'd with the column's pair of
//    activations broadcast as one 64-bit element. A row's even and odd lanes
//    are added when the tile is stored.
//  - Batch (kPackedFloatBatchCols columns and more: prompt chunks, bound by
//    compute). The load is already 16 lanes of bf16 pairs (BF16) or becomes
//    them with one vcvtne2ps2bf16 (F16, converted once per row group into
//    scratch, then shared by every column); vdpbf16ps against the column's
//    bf16 pair broadcast adds both products to the row's lane. Tiles of 32
//    rows x 12 columns keep 24 accumulators busy for 2 weight loads and 12
//    broadcasts per pair.
#include "kernels/avx512/common.h"
#include "kernels/avx512/packed_tiles.h"
#include "kernels/packed.h"
#include "kernels/variants.h"

namespace brisk::kernels::avx512 {

namespace {

struct F16 {
  static __m512 lo(const uint8_t* q) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q))); }
  static __m512 hi(const uint8_t* q) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 32)));
  }
};
struct BF16 {
  static __m512 widen(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }
  static __m512 lo(const uint8_t* q) { return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q))); }
  static __m512 hi(const uint8_t* q) { return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 32))); }
};

// Decode's default: a line 4.5 KB ahead per line, pages touched every 8
// lines (see run_groups).
constexpr StreamPrefetch kLineT0Touch{1, _MM_HINT_T0, static_cast<int>(kPrefetchBytes), 8, 0, 1};

template <typename L, StreamPrefetch P = kLineT0Touch>
struct ExactTile {
  int64_t npairs;
  const uint8_t* w;
  size_t w_stride;
  int nrows;
  const uint8_t* act;
  size_t act_stride;
  float* out;
  size_t out_stride;

  template <int C>
  void run(int g, int c0) const {
    run_groups<1, C>(g, c0, 1);
  }

  // Row groups g, g + span, ..., g + (NG - 1) * span (NG weight streams) times
  // columns [c0, c0 + C).
  template <int NG, int C>
  void run_groups(int g, int c0, int span) const {
    const uint8_t* grp[NG];
    for (int i = 0; i < NG; ++i) grp[i] = w + static_cast<size_t>(g + i * span) * w_stride;
    const double* x[C];
    for (int c = 0; c < C; ++c) x[c] = reinterpret_cast<const double*>(act + static_cast<size_t>(c0 + c) * act_stride);
    __m512 lo[NG][C], hi[NG][C];
    for (int i = 0; i < NG; ++i)
      for (int c = 0; c < C; ++c) lo[i][c] = hi[i][c] = _mm512_setzero_ps();
    for (int64_t p = 0; p < npairs; ++p) {
      const size_t at = 64 * static_cast<size_t>(p);
      __m512 wl[NG], wh[NG];
      for (int i = 0; i < NG; ++i) {
        // One line kPrefetchBytes ahead per line read: measured faster for decode
        // and prompts alike.
        // Decode (one column) prefetches as P says; by default also touching
        // its pages 32 KiB ahead (kernels/prefetch.h), every 8 lines. Tiles
        // of several columns do not: there the touches measured slower (see
        // gemm_exact).
        if constexpr (C == 1)
          stream_prefetch<P, 64>(grp[i] + at, p);
        else
          _mm_prefetch(reinterpret_cast<const char*>(grp[i] + prefetch_offset<NG>(at, kPrefetchBytes, w_stride, span)),
                       _MM_HINT_T0);
        wl[i] = L::lo(grp[i] + at);
        wh[i] = L::hi(grp[i] + at);
      }
      for (int c = 0; c < C; ++c) {
        double pair;  // activations 2p, 2p+1 as one 64-bit element
        std::memcpy(&pair, x[c] + p, 8);
        const __m512 xp = _mm512_castpd_ps(_mm512_set1_pd(pair));
        for (int i = 0; i < NG; ++i) {
          lo[i][c] = _mm512_fmadd_ps(wl[i], xp, lo[i][c]);
          hi[i][c] = _mm512_fmadd_ps(wh[i], xp, hi[i][c]);
        }
      }
    }
    // Lane 2i+j of lo holds row i's products with values 2p+j (hi: row 8+i).
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    for (int i = 0; i < NG; ++i) {
      __m512 sum[C];
      for (int c = 0; c < C; ++c)
        sum[c] = _mm512_add_ps(_mm512_permutex2var_ps(lo[i][c], even, hi[i][c]),
                               _mm512_permutex2var_ps(lo[i][c], odd, hi[i][c]));
      store_group(out, out_stride, nrows, g + i * span, c0, sum);
    }
  }
};

// Decode (one column) reads one stream per thread, its pages touched ahead:
// that measured faster than several runs per thread, with or without
// touches, and than Q4_0's non-temporal bursts.
// Otherwise several weight streams per thread keep more DRAM reads in
// flight than one: 2 columns read 4 groups side by side, 3-4 columns 2
// groups, and from 5 columns one group with 8-column tiles, which read the
// weights once.
template <typename L, StreamPrefetch P = kLineT0Touch>
void gemm_exact(int64_t k, const uint8_t* w, size_t w_stride, int nrows, const uint8_t* act, size_t act_stride,
                int ncols, float* out, size_t out_stride) {
  const ExactTile<L, P> t{k / 2, w, w_stride, nrows, act, act_stride, out, out_stride};
  const int ngroups = (nrows + kPackRows - 1) / kPackRows;
  int g = 0;
  if (ncols == 1) {
    if (P.streams == 4) g = for_each_stream_tile<4, 1>(t, g, ngroups, 0, 1, true);
    if (P.streams >= 2) g = for_each_stream_tile<2, 1>(t, g, ngroups, 0, 1, true);
    for (; g < ngroups; ++g) t.template run<1>(g, 0);
    return;
  }
  if (ncols <= 2) g = for_each_stream_tile<4, 2>(t, g, ngroups, 0, ncols, true);
  if (ncols <= 4) g = for_each_stream_tile<2, 4>(t, g, ngroups, 0, ncols, true);
  for (; g < ngroups; ++g) for_each_col_tile<8>(t, g, 0, ncols);
}

// G row groups (bf16 pairs, groups w_stride bytes apart) x C columns.
template <int G>
struct BatchTile {
  int64_t npairs;
  const uint8_t* w;  // the G groups starting at row group g0
  size_t w_stride;
  int g0;
  int nrows;
  const uint8_t* act;  // bf16 values of column 0
  size_t act_stride;
  float* out;
  size_t out_stride;

  template <int C>
  void run(int /*g*/, int c0) const {
    const uint8_t* x[C];
    for (int c = 0; c < C; ++c) x[c] = act + static_cast<size_t>(c0 + c) * act_stride;
    __m512 acc[G][C];
    for (int i = 0; i < G; ++i)
      for (int c = 0; c < C; ++c) acc[i][c] = _mm512_setzero_ps();
    for (int64_t p = 0; p < npairs; ++p) {
      __m512bh wv[G];
      for (int i = 0; i < G; ++i)
        wv[i] = (__m512bh)_mm512_loadu_si512(w + static_cast<size_t>(i) * w_stride + 64 * static_cast<size_t>(p));
      for (int c = 0; c < C; ++c) {
        int32_t pair;
        std::memcpy(&pair, x[c] + 4 * p, 4);
        const __m512bh xp = (__m512bh)_mm512_set1_epi32(pair);
        for (int i = 0; i < G; ++i) acc[i][c] = _mm512_dpbf16_ps(acc[i][c], wv[i], xp);
      }
    }
    for (int i = 0; i < G; ++i) store_group(out, out_stride, nrows, g0 + i, c0, acc[i]);
  }
};

// One F16 group as bf16 pairs (same layout), rounded to nearest even.
void f16_groups_to_bf16(const uint8_t* src, int64_t npairs, uint8_t* dst) {
  for (int64_t p = 0; p < npairs; ++p) {
    const __m512 lo = F16::lo(src + 64 * p), hi = F16::hi(src + 64 * p);
    _mm512_storeu_si512(dst + 64 * p, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
  }
}

template <bool kIsF16>
void gemm_batch(int64_t k, const uint8_t* w, size_t w_stride, int nrows, const uint8_t* act, size_t act_stride,
                int ncols, float* out, size_t out_stride) {
  const int64_t npairs = k / 2;
  const uint8_t* xh = act + packed_float_act_offset(k);
  const int ngroups = (nrows + kPackRows - 1) / kPackRows;
  uint8_t* conv = kIsF16 ? static_cast<uint8_t*>(scratch(2 * w_stride)) : nullptr;
  for (int g = 0; g < ngroups; g += 2) {
    const int G = ngroups - g >= 2 ? 2 : 1;
    const uint8_t* src = w + static_cast<size_t>(g) * w_stride;
    if (kIsF16) {
      for (int i = 0; i < G; ++i) f16_groups_to_bf16(src + i * w_stride, npairs, conv + i * w_stride);
      src = conv;
    }
    if (G == 2) {
      const BatchTile<2> t{npairs, src, w_stride, g, nrows, xh, act_stride, out, out_stride};
      for_each_col_tile<12>(t, g, 0, ncols);
    } else {
      const BatchTile<1> t{npairs, src, w_stride, g, nrows, xh, act_stride, out, out_stride};
      for_each_col_tile<12>(t, g, 0, ncols);
    }
  }
}

template <bool kIsF16, StreamPrefetch P = kLineT0Touch>
void gemm_float_packed(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride,
                       int ncols, float* out, size_t out_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(act);
  if (ncols >= kPackedFloatBatchCols) {
    gemm_batch<kIsF16>(k, wb, w_stride, nrows, ab, act_stride, ncols, out, out_stride);
  } else if constexpr (kIsF16) {
    gemm_exact<F16, P>(k, wb, w_stride, nrows, ab, act_stride, ncols, out, out_stride);
  } else {
    gemm_exact<BF16, P>(k, wb, w_stride, nrows, ab, act_stride, ncols, out, out_stride);
  }
}

}  // namespace

void quantize_packed_float_act(const float* x, void* out, int64_t k) {
  auto* base = static_cast<uint8_t*>(out);
  std::memcpy(base, x, static_cast<size_t>(k) * sizeof(float));
  auto* h = base + packed_float_act_offset(k);
  int64_t i = 0;
  for (; i + 16 <= k; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(h + 2 * i), (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(x + i)));
  if (i < k) {
    const __mmask16 m = lane_mask(k - i);
    _mm256_mask_storeu_epi16(h + 2 * i, m, (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

void gemm_f16_packed(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride,
                     int ncols, float* out, size_t out_stride) {
  gemm_float_packed<true>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}

void gemm_bf16_packed(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride,
                      int ncols, float* out, size_t out_stride) {
  gemm_float_packed<false>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}

namespace {
// Decode prefetch schemes for the planner (kernels/variants.h), as the
// quantized kernels' (matmul_packed.cpp): one-column tiles only, so each
// variant is offered for one column. A step is one 64-byte line (kD:
// packed_tiles.h).
constexpr StreamPrefetch kLineT0{1, _MM_HINT_T0, kD, 0, 0, 1};      // without the touches
constexpr StreamPrefetch kLineT1{1, _MM_HINT_T1, kD, 0, 0, 1};      // into L2 only
constexpr StreamPrefetch kLineHw{0, _MM_HINT_T0, 0, 0, 0, 1};       // the hardware prefetchers alone
constexpr StreamPrefetch kLineT0Runs{1, _MM_HINT_T0, kD, 0, 0, 2};  // two runs per thread
constexpr StreamPrefetch kLineT0Runs4{1, _MM_HINT_T0, kD, 0, 0, 4};  // four
constexpr StreamPrefetch kLineT0Runs4Far{1, _MM_HINT_T0, 2 * kD, 0, 0, 4};  //   twice as far ahead

template <bool kIsF16, StreamPrefetch P>
constexpr MatmulKernel kFloatKernel{TensorType::BF16, quantize_packed_float_act, gemm_float_packed<kIsF16, P>,
                                    packed_float_act_bytes, true};
template <bool kIsF16, StreamPrefetch P>
constexpr KernelVariant one_col(const char* name) {
  return {name, Isa::avx512, true, 1, 1, &kFloatKernel<kIsF16, P>};
}

constexpr KernelVariant kF16Variants[] = {
    one_col<true, kLineT0>("avx512.packed.f16.t0"),
    one_col<true, kLineT1>("avx512.packed.f16.t1"),
    one_col<true, kLineHw>("avx512.packed.f16.hw"),
    one_col<true, kLineT0Runs>("avx512.packed.f16.2s"),
    one_col<true, kLineT0Runs4>("avx512.packed.f16.4s"),
    one_col<true, kLineT0Runs4Far>("avx512.packed.f16.4s.far"),
};
constexpr KernelVariant kBF16Variants[] = {
    one_col<false, kLineT0>("avx512.packed.bf16.t0"),
    one_col<false, kLineT1>("avx512.packed.bf16.t1"),
    one_col<false, kLineHw>("avx512.packed.bf16.hw"),
    one_col<false, kLineT0Runs>("avx512.packed.bf16.2s"),
    one_col<false, kLineT0Runs4>("avx512.packed.bf16.4s"),
    one_col<false, kLineT0Runs4Far>("avx512.packed.bf16.4s.far"),
};
}  // namespace

const KernelVariant* packed_float_decode_variants(TensorType t, int* n) {
  switch (t) {
    case TensorType::F16: *n = static_cast<int>(std::size(kF16Variants)); return kF16Variants;
    case TensorType::BF16: *n = static_cast<int>(std::size(kBF16Variants)); return kBF16Variants;
    default: *n = 0; return nullptr;
  }
}

}  // namespace brisk::kernels::avx512
