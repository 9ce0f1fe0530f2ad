// SPDX-License-Identifier: MIT
// What the AVX2 packed-layout kernels (matmul_packed*.cpp) share: storing
// 8 rows of results, splitting a 16-row group into the two halves a ymm
// holds, and walking the columns in tiles. AVX2 files only (see common.h on
// why these helpers stay internal).
#pragma once
#include "kernels/avx2/common.h"
#include "kernels/packed.h"
#include "kernels/simd/group_loops.h"
#include "quant/blocks.h"

namespace brisk::kernels::avx2 {
namespace {

using simd::drive;
using simd::for_each_col_tile;
using simd::kColBlock;
using simd::listed;
using simd::load_i32;

// 8 bytes at p (rows 8h .. 8h + 7 of a 16-row byte vector) zero-extended
// to the 8 int32 slots.
inline __m256i rows_u8(const uint8_t* p) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}

// A 16-byte quarter of a packed F16 / BF16 line (rows 4q .. 4q + 3, a pair
// of values each) widened to 8 floats (packed.h).
struct F16 {
  static __m256 quarter(const uint8_t* q) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q))); }
};
struct BF16 {
  static __m256 quarter(const uint8_t* q) {
    const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
  }
};

// Rows [0, valid) of 8 results at o (valid <= 0: none).
inline void store_rows(float* o, int valid, __m256 v) {
  if (valid >= 8) {
    _mm256_storeu_ps(o, v);
  } else if (valid > 0) {
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(valid), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    _mm256_maskstore_ps(o, mask, v);
  }
}

// Halves h0 .. h0 + NH - 1 of group g (rows 16g + 8h ..) for columns
// [c0, c0 + C): rows past nrows are not written.
template <int NH, int C>
inline void store_halves(float* out, size_t out_stride, int nrows, int g, int h0, int c0, const __m256 (&acc)[NH][C]) {
  for (int c = 0; c < C; ++c)
    for (int i = 0; i < NH; ++i) {
      const int row = g * kPackRows + 8 * (h0 + i);
      store_rows(out + static_cast<size_t>(c0 + c) * out_stride + static_cast<size_t>(row), nrows - row, acc[i][c]);
    }
}

// Q6_K slice offsets (packed.h's q6k_hi_offset / q6k_lo_offset) from
// constants: the constexpr functions of the shared header are inline, and
// an inline function called at run time here could be emitted with AVX2
// encodings (common.h), so they are only evaluated at compile time.
constexpr size_t kQ6Hi0 = q6k_hi_offset(0, 0);
constexpr size_t kQ6Chunk = q6k_hi_offset(0, 1) - kQ6Hi0;
constexpr size_t kQ6Lo0 = q6k_lo_offset(0, 0) - kQ6Hi0;
constexpr size_t kQ6LoRun = q6k_lo_offset(1, 0) - q6k_lo_offset(0, 0);
static_assert(q6k_hi_offset(1, 3) == kQ6Hi0 + kQ6Chunk * 11 && q6k_lo_offset(3, 5) == q6k_hi_offset(1, 5) + kQ6Lo0 + kQ6LoRun);
inline size_t q6_hi(int h, int m) { return kQ6Hi0 + kQ6Chunk * static_cast<size_t>(8 * h + m); }
inline size_t q6_lo(int j, int m) { return q6_hi(j / 2, m) + kQ6Lo0 + kQ6LoRun * static_cast<size_t>(j % 2); }

// How far ahead of the current pair of blocks the weight stream is prefetched.
constexpr size_t kPrefetchBytes = 4608;

// How a one-column (decode) tile prefetches its weights, a template argument
// of the packed tiles so that each scheme is a kernel of its own that the
// planner can time (kernels/variants.h): which reads memory fastest is the
// machine's matter (its prefetchers, miss buffers, the hypervisor's paging).
// A step is a tile's unit of weights (a Q4_0/Q8_0 pair of blocks, a K-quant
// super-block), prefetched kPrefetchBytes ahead unless said otherwise.
enum class OnePrefetch {
  t0,         // the step's lines into L1
  t0_touch,   //   and the pages beyond them (prefetch.h, touch_pages_ahead)
  nta_touch,  // non-temporal (read once), and the pages
  far_touch,  // into L1 twice as far ahead, and the pages
  hw,         // none: the hardware prefetchers alone
  nta_burst,  // every kBurstSteps steps, the next kBurstSteps' lines non-temporal, and their pages
};
constexpr int kBurstSteps = 4;

// The prefetches of scheme P at step `index`, whose weights start at `step`.
template <OnePrefetch P, int StepBytes>
inline void prefetch_one_column(const uint8_t* step, int64_t index) {
  if constexpr (P == OnePrefetch::nta_burst)
    if (index % kBurstSteps == 0) prefetch_stream_bytes<kBurstSteps * StepBytes, _MM_HINT_NTA>(step + kPrefetchBytes);
  if constexpr (P == OnePrefetch::t0) prefetch_bytes<StepBytes>(step + kPrefetchBytes);
  if constexpr (P == OnePrefetch::t0_touch) prefetch_stream_bytes<StepBytes>(step + kPrefetchBytes);
  if constexpr (P == OnePrefetch::nta_touch) prefetch_stream_bytes<StepBytes, _MM_HINT_NTA>(step + kPrefetchBytes);
  if constexpr (P == OnePrefetch::far_touch) prefetch_stream_bytes<StepBytes>(step + 2 * kPrefetchBytes);
}

// The weights are prefetched in the pass of the first half only (the
// second finds the lines in cache): the lines of a C-column tile's
// super-block, for one column as P says (OnePrefetch). The one-column
// default is T0 without page touches; the other schemes are variants.
template <OnePrefetch P, int C, size_t Bytes>
inline void prefetch_super(const uint8_t* sb, int64_t b, int h0) {
  if (h0 != 0) return;
  if constexpr (C == 1)
    prefetch_one_column<P, Bytes>(sb, b);
  else
    prefetch_bytes<Bytes>(sb + kPrefetchBytes);
}

// Slice m (0..7) of run u (0..7) of a packed Q6_K super-block at sb, half
// h (rows 8h .. 8h + 7), as unsigned 6-bit q per byte: the low nibble from
// the run's nibble slice, the top 2 bits from the half's 2-bit slice.
inline __m256i q6_slice(const uint8_t* sb, int u, int m, int h) {
  const __m256i l = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + q6_lo(u / 2, m) + 32 * h));
  const __m256i t = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + q6_hi(u / 4, m) + 32 * h));
  const __m256i low = _mm256_and_si256(u % 2 ? _mm256_srli_epi16(l, 4) : l, _mm256_set1_epi8(0x0F));
  const int s = u % 4;  // the 2-bit field of the byte, moved to bits 4-5
  const __m256i top = s == 0 ? _mm256_slli_epi16(t, 4) : s == 1 ? _mm256_slli_epi16(t, 2) : s == 2 ? t : _mm256_srli_epi16(t, 2);
  return _mm256_or_si256(low, _mm256_and_si256(top, _mm256_set1_epi8(0x30)));
}

// A tile of group g x C columns: both halves in one pass while their
// accumulators fit the 16 ymm registers (kBoth columns), else one pass per
// half (a half past the last row is skipped).
template <class Tile, int kBoth>
struct GroupTile {
  const Tile& t;
  template <int C>
  void run(int g, int c0) const {
    if constexpr (C <= kBoth) {
      t.template run_halves<2, C>(g, 0, c0);
    } else {
      t.template run_halves<1, C>(g, 0, c0);
      if (t.nrows > g * kPackRows + 8) t.template run_halves<1, C>(g, 1, c0);
    }
  }
};

// What the Q4_0 / Q8_0 tiles share: C columns of "Q8_0 with sums"
// activations (packed.h) against packed groups, results stored per half
// (8 rows) and column.
struct QSumsTile {
  int64_t nb;
  const uint8_t* w;  // first group
  size_t w_stride;   // bytes per group
  int nrows;
  const uint8_t* act;
  size_t act_stride;
  size_t sums_off;
  float* out;
  size_t out_stride;

  const uint8_t* group(int g) const { return w + static_cast<size_t>(g) * w_stride; }
  // Column c's block b: bytes at qs[c] + 34 b, scale ad[c][b], sum as[c][b].
  template <int C>
  void columns(int c0, const uint8_t* (&qs)[C], const float* (&ad)[C], const int32_t* (&as)[C]) const {
    for (int c = 0; c < C; ++c) {
      const uint8_t* col = act + static_cast<size_t>(c0 + c) * act_stride;
      qs[c] = col + 2;
      ad[c] = reinterpret_cast<const float*>(col + sums_off);
      as[c] = reinterpret_cast<const int32_t*>(col + sums_off) + nb;
    }
  }
  template <int NH, int C>
  void store(int g, int h0, int c0, const __m256 (&acc)[NH][C]) const {
    store_halves(out, out_stride, nrows, g, h0, c0, acc);
  }
};

using simd::KTile;  // K-quant tiles store through store_halves

}  // namespace
}  // namespace brisk::kernels::avx2
