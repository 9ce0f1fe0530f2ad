// SPDX-License-Identifier: MIT
// AVX2 kernels over packed F16 / BF16 weights (layout: packed.h), for
// machines without AVX-512: the layout the AVX-512 kernels read, so one
// packing serves both.
//
// A 64-byte line (16 rows x one pair of values) is four 16-byte quarters,
// rows 4q .. 4q + 3. F16C (or a 16-bit shift, for BF16) widens a quarter to
// one ymm whose lane 2i + j holds row 4q + i's value 2p + j; it is FMA'd
// with the column's pair of activations broadcast as one 64-bit element, and
// a row's two lanes are added when the tile is stored.
//
// The activations are plain f32 columns and every product is exact, at any
// column count: AVX2 has no bf16 dot product, so the AVX-512 kernels'
// bf16 path for prompts has no counterpart here. Batches may instead take
// the integer variants (.i16, packed_i16_tiles.h), which the planner picks
// where they measure faster.
#include <climits>

#include "kernels/avx2/common.h"
#include "kernels/avx2/packed_i16_tiles.h"
#include "kernels/avx2/packed_tiles.h"
#include "kernels/packed.h"
#include "kernels/variants.h"

namespace brisk::kernels::avx2 {

namespace {

// Lines per prefetch burst of a one-column tile (and per page-touch check).
constexpr int kBurstLines = 8;

// Row groups g, g + span, ..., g + (NG - 1) * span (NG weight streams) times
// columns [c0, c0 + C). 4 x NG x C accumulators, twice that for one stream
// and one column, which takes two lines per step so that the FMA latency
// does not pace the stream.
template <typename L, OnePrefetch P>
struct FloatTile {
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

  // One line p of every stream into the accumulators a.
  template <int NG, int C>
  __attribute__((always_inline)) void line(const uint8_t* const (&grp)[NG], const double* const (&x)[C], int64_t p,
                                           __m256 (&a)[NG][4][C]) const {
    const size_t at = 64 * static_cast<size_t>(p);
    __m256 xp[C];
    for (int c = 0; c < C; ++c) xp[c] = _mm256_castpd_ps(_mm256_broadcast_sd(x[c] + p));
    for (int i = 0; i < NG; ++i) {
      if constexpr (C == 1) {
        if (p % kBurstLines == 0) prefetch_one_column<P, 64 * kBurstLines>(grp[i] + at, p / kBurstLines);
      } else {
        prefetch_bytes<64>(grp[i] + at + kPrefetchBytes);
      }
      for (int q = 0; q < 4; ++q) {
        const __m256 wq = L::quarter(grp[i] + at + 16 * q);
        for (int c = 0; c < C; ++c) {
          a[i][q][c] = _mm256_fmadd_ps(wq, xp[c], a[i][q][c]);
          keep(a[i][q][c]);
        }
      }
    }
  }

  template <int NG, int C>
  void run_groups(int g, int c0, int span) const {
    const uint8_t* grp[NG];
    for (int i = 0; i < NG; ++i) grp[i] = w + static_cast<size_t>(g + i * span) * w_stride;
    const double* x[C];
    for (int c = 0; c < C; ++c) x[c] = reinterpret_cast<const double*>(act + static_cast<size_t>(c0 + c) * act_stride);
    __m256 acc[NG][4][C], odd[NG][4][C];
    for (int i = 0; i < NG; ++i)
      for (int q = 0; q < 4; ++q)
        for (int c = 0; c < C; ++c) acc[i][q][c] = odd[i][q][c] = _mm256_setzero_ps();
    int64_t p = 0;
    if constexpr (NG * C == 1) {
      for (; p + 2 <= npairs; p += 2) {
        line(grp, x, p, acc);
        line(grp, x, p + 1, odd);
      }
    }
    for (; p < npairs; ++p) line(grp, x, p, acc);
    if constexpr (NG * C == 1)
      for (int q = 0; q < 4; ++q) acc[0][q][0] = _mm256_add_ps(acc[0][q][0], odd[0][q][0]);
    for (int i = 0; i < NG; ++i) {
      const int row = (g + i * span) * kPackRows;
      for (int c = 0; c < C; ++c) {
        float* o = out + static_cast<size_t>(c0 + c) * out_stride + static_cast<size_t>(row);
        for (int h = 0; h < 2; ++h) {
          // hadd gives rows 0 1 4 5 | 2 3 6 7 of the half; the permute puts them in order.
          const __m256 s = _mm256_hadd_ps(acc[i][2 * h][c], acc[i][2 * h + 1][c]);
          const __m256 v = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), 0xD8));
          store_rows(o + 8 * h, nrows - row - 8 * h, v);
        }
      }
    }
  }
};

// NG streams over contiguous runs of [g0, g1): stream i takes groups
// g0 + i * span .. g0 + (i + 1) * span - 1. Returns the first group not done.
template <int NG, typename Tile>
int run_streams(const Tile& t, int g0, int g1) {
  const int span = (g1 - g0) / NG;
  for (int g = g0; g < g0 + span; ++g) t.template run_groups<NG, 1>(g, 0, span);
  return g0 + NG * span;
}

// One column reads `Streams` runs of groups side by side (1: the whole
// piece as one stream). More columns take tiles of up to 3 (12 accumulators,
// 3 broadcast activations and the widened quarter fill the 16 ymm
// registers), the activations blocked so that they stay in L2.
template <typename L, OnePrefetch P = OnePrefetch::t0_touch, int Streams = 1>
void gemm_float_packed(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride,
                       int ncols, float* out, size_t out_stride) {
  const FloatTile<L, P> t{k / 2, static_cast<const uint8_t*>(w), w_stride, nrows, static_cast<const uint8_t*>(act),
                          act_stride, out, out_stride};
  const int ngroups = (nrows + kPackRows - 1) / kPackRows;
  if (ncols == 1) {
    int g = 0;
    if constexpr (Streams >= 2) g = run_streams<Streams>(t, g, ngroups);
    for (; g < ngroups; ++g) t.template run<1>(g, 0);
    return;
  }
  drive<3>(t, nrows, ncols);
}

}  // namespace

void quantize_packed_i16_act(const float* x, void* out, int64_t k) {
  auto* base = static_cast<uint8_t*>(out);
  auto* d = reinterpret_cast<float*>(base);
  auto* q = reinterpret_cast<int16_t*>(base + packed_i16_act_offset(k));
  const int64_t full = k / kI16Block;
  const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF)), amax = _mm256_set1_ps(kI16ActMax);
  for (int64_t b = 0; b < full; ++b) {
    const float* xb = x + b * kI16Block;
    __m256 v[4], m = _mm256_setzero_ps();
    for (int i = 0; i < 4; ++i) {
      v[i] = _mm256_loadu_ps(xb + 8 * i);
      m = _mm256_max_ps(m, _mm256_and_ps(v[i], absmask));
    }
    // The block's max|x| in every lane.
    m = _mm256_max_ps(m, _mm256_permute2f128_ps(m, m, 1));
    m = _mm256_max_ps(m, _mm256_permute_ps(m, 0x4E));
    m = _mm256_max_ps(m, _mm256_permute_ps(m, 0xB1));
    const __m256 inv = _mm256_and_ps(_mm256_div_ps(amax, m), _mm256_cmp_ps(m, _mm256_setzero_ps(), _CMP_GT_OQ));
    d[b] = _mm256_cvtss_f32(_mm256_div_ps(m, amax));
    for (int i = 0; i < 4; i += 2) {
      const __m256i lo = _mm256_cvtps_epi32(_mm256_mul_ps(v[i], inv));
      const __m256i hi = _mm256_cvtps_epi32(_mm256_mul_ps(v[i + 1], inv));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + b * kI16Block + 8 * i),
                          _mm256_permute4x64_epi64(_mm256_packs_epi32(lo, hi), 0xD8));
    }
  }
  // A partial last block as the reference does it.
  if (full < i16_blocks(k)) {
    alignas(64) uint8_t tail[4 * 64 + kI16Block * sizeof(int16_t)];  // one block's scale and values
    const int64_t i0 = full * kI16Block;
    quantize_packed_i16_act_ref(x + i0, tail, k - i0);
    d[full] = *reinterpret_cast<const float*>(tail);
    std::memcpy(q + i0, tail + packed_i16_act_offset(k - i0), kI16Block * sizeof(int16_t));
  }
}

void gemm_f16_packed(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride,
                     int ncols, float* out, size_t out_stride) {
  gemm_float_packed<F16>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}
void gemm_bf16_packed(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride,
                      int ncols, float* out, size_t out_stride) {
  gemm_float_packed<BF16>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}

namespace {
// The one-column schemes other than the default, as variants for the planner
// (kernels/variants.h): other prefetches, and two runs per thread.
template <typename L, OnePrefetch P, int S>
constexpr MatmulKernel kFloatKernel{TensorType::F32, quantize_f32, gemm_float_packed<L, P, S>, nullptr, true};
template <typename L, OnePrefetch P, int S = 1>
constexpr KernelVariant one_col(const char* name) {
  return {name, Isa::avx2, true, 1, 1, &kFloatKernel<L, P, S>};
}
// Batches in int16 (packed_i16_tiles.h): vpmaddwd, then vpaddd.
struct MaddDot {
  static __m256i add(__m256i acc, __m256i w, __m256i x) { return _mm256_add_epi32(acc, _mm256_madd_epi16(w, x)); }
};
template <typename L>
constexpr MatmulKernel kI16Kernel{TensorType::I16, quantize_packed_i16_act, gemm_i16_packed<L, MaddDot>,
                                  packed_i16_act_bytes, true};
// From 5 columns: below, the conversion of the weights outweighs the
// faster products.
constexpr KernelVariant kF16Variants[] = {
    one_col<F16, OnePrefetch::t0>("avx2.packed.f16.t0"),
    one_col<F16, OnePrefetch::nta_touch>("avx2.packed.f16.nta"),
    one_col<F16, OnePrefetch::far_touch>("avx2.packed.f16.far"),
    one_col<F16, OnePrefetch::hw>("avx2.packed.f16.hw"),
    one_col<F16, OnePrefetch::t0_touch, 2>("avx2.packed.f16.2s"),
    {"avx2.packed.f16.i16", Isa::avx2, true, 5, INT_MAX, &kI16Kernel<F16>},
};
constexpr KernelVariant kBF16Variants[] = {
    one_col<BF16, OnePrefetch::t0>("avx2.packed.bf16.t0"),
    one_col<BF16, OnePrefetch::nta_touch>("avx2.packed.bf16.nta"),
    one_col<BF16, OnePrefetch::far_touch>("avx2.packed.bf16.far"),
    one_col<BF16, OnePrefetch::hw>("avx2.packed.bf16.hw"),
    one_col<BF16, OnePrefetch::t0_touch, 2>("avx2.packed.bf16.2s"),
    {"avx2.packed.bf16.i16", Isa::avx2, true, 5, INT_MAX, &kI16Kernel<BF16>},
};
}  // namespace

const KernelVariant* packed_float_decode_variants(TensorType t, int* n) {
  switch (t) {
    case TensorType::F16: return listed(kF16Variants, n);
    case TensorType::BF16: return listed(kBF16Variants, n);
    default: *n = 0; return nullptr;
  }
}

}  // namespace brisk::kernels::avx2
