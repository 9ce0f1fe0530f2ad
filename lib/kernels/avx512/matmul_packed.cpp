// SPDX-License-Identifier: MIT
// AVX-512 VNNI kernels over packed Q4_0 / Q8_0 weights (layout: packed.h);
// the K-quants' are in matmul_packed_k.cpp.
//
// A tile is one 16-row group times up to 8 activation columns. Per block,
// the group's weights become 8 vectors W[j] whose 32-bit slot r holds row r's
// weights 4j..4j+3 as unsigned bytes; column c's activation bytes 4j..4j+3
// are broadcast to all slots, so 8 vpdpbusd leave row r's integer block dot
// in slot r. Then one convert and one FMA (scale = row scales x the column's
// block scale) per column and block finish 16 rows at once, and the result
// vector is stored as 16 consecutive outputs: no horizontal sums.
//
// The weights are unsigned (Q4_0 nibbles 0..15; Q8_0 stored with +128), so
// each block's integer dot starts at -offset x (sum of the activation block),
// which the "Q8_0 with sums" activations carry precomputed.
#include <climits>

#include "kernels/avx512/common.h"
#include "kernels/avx512/packed_tiles.h"
#include "kernels/packed.h"
#include "kernels/variants.h"
#include "quant/blocks.h"

namespace brisk::kernels::avx512 {

using quant::BlockQ8_0;

namespace {

template <TensorType T>
struct Traits;
template <>
struct Traits<TensorType::Q4_0> {
  static constexpr int kSlices = 4;
  static constexpr int kShift = 3;  // offset 8
};
template <>
struct Traits<TensorType::Q8_0> {
  static constexpr int kSlices = 8;
  static constexpr int kShift = 7;  // offset 128
};

// Tiles of two groups of 1-2 columns (kColTile2: up to 4) hold the block's
// unpacked weights in registers; from kWideMinCols they run slice-major
// (PackedTile::run_pair_wide) in tiles of up to kColTileWide.
constexpr int kColTile2 = 4;
constexpr int kColTileWide = 8;
constexpr int kWideMinCols = 3;

// The second column tile of a group (columns c0.. of a block) reads the
// group's weights from cache, where the first tile left them; below
// kColBlock columns (batches of sequences: PackedTile::next_tiles) it
// prefetches the next tile's groups into L2 instead of its own stream, or
// the first tile of every group would start on DRAM with only its own
// prefetch distance in flight. Further tiles (9 or more columns) find the
// next groups in L2 already. Prompt blocks, compute-bound, keep their own
// stream's prefetch: there the early fetch measured a little slower.
template <int kTile>
constexpr bool second_col_tile(int c0) {
  return c0 % kColBlock > 0 && c0 % kColBlock <= kTile;
}

// How far ahead of the current block the weight stream is prefetched.
// With DRAM-resident weights a tile must prefetch well ahead, or the first
// tile of a group waits on DRAM at every block. With all cores streaming,
// multi-column one-group tiles measured faster four times as far ahead;
// decode and two-group tiles (two streams each) do best at kPrefetchBytes.
template <int NG, int C>
constexpr size_t prefetch_distance() {
  return C == 1 || NG > 1 ? kPrefetchBytes : 4 * kPrefetchBytes;
}

// The one-column defaults, which a plan keeps unless a variant measures
// clearly faster. Q4_0 needs compute for every line it reads (unpacking,
// twice Q8_0's dot products per byte), so its loads alone do not keep enough
// lines in flight: every 4 pairs the next 4 pairs' lines are prefetched
// non-temporal, with their pages. (T0 lines twice as far with the pages
// touched, the variant ".t0.far.touch", was as fast in some builds and far
// slower in others with the very same loop code: it stalls on the
// page touches depending on where the code lands.) Q8_0's loads do keep
// enough in flight, and the hardware prefetchers follow them once the page
// walks are taken early.
template <TensorType T>
constexpr StreamPrefetch kQOne = T == TensorType::Q4_0 ? kBurstNta : kTouch;

// kFewStream: tiles of several columns prefetch by P as well (one group per
// tile), instead of each pair's lines at prefetch_distance.
template <TensorType T, StreamPrefetch P = kQOne<T>, bool kFewStream = false>
struct PackedTile {
  static constexpr int kSlices = Traits<T>::kSlices;
  static constexpr size_t kPairBytes = 64 + 2 * kSlices * 64;
  int64_t nb;
  const uint8_t* w;  // first group
  size_t w_stride;   // bytes per group
  int nrows;
  const uint8_t* act;
  size_t act_stride;
  size_t sums_off;
  float* out;
  size_t out_stride;
  bool next_tiles;  // second tiles prefetch the next tile's groups (second_col_tile)

  template <int C>
  void run(int g, int c0) const {
    run_groups<1, C>(g, c0, 1);
  }

  // Columns [c0, c0 + C): block b's bytes at qs + 34 b, its scale ad[b]
  // and its sum as[b] ("Q8_0 with sums", packed.h).
  template <int C>
  void columns(int c0, const uint8_t* (&qs)[C], const float* (&ad)[C], const int32_t* (&as)[C]) const {
    for (int c = 0; c < C; ++c) {
      const uint8_t* col = act + static_cast<size_t>(c0 + c) * act_stride;
      qs[c] = col + 2;
      ad[c] = reinterpret_cast<const float*>(col + sums_off);
      as[c] = reinterpret_cast<const int32_t*>(col + sums_off) + nb;
    }
  }

  // Rows of groups g, g + span, ..., g + (NG - 1) * span times columns
  // [c0, c0 + C) (packed_tiles.h, for_each_stream_tile). With two
  // groups each activation broadcast feeds two vpdpbusd: per column and
  // block the broadcasts, the offset and the scale then cost half as much
  // per row, which matters where the multiply pipes bind (in cache).
  template <int NG, int C>
  void run_groups(int g, int c0, int span) const {
    if constexpr (C == 1 && NG > 1 && P.neighbours) {
      run_one_neighbours<NG>(g, c0);
    } else if constexpr (C == 1 || kFewStream) {
      run_groups<NG, C, false>(g, c0, span);
    } else {
      if (next_tiles && second_col_tile<NG == 1 ? kColTile : kColTileWide>(c0))
        run_groups<NG, C, true>(g, c0, span);
      else
        run_groups<NG, C, false>(g, c0, span);
    }
  }
  // kNext: prefetch the groups of the next tile (second_col_tile).
  template <int NG, int C, bool kNext>
  void run_groups(int g, int c0, int span) const {
    if constexpr (NG == 2 && C >= kWideMinCols)
      run_pair_wide<C, kNext>(g, c0, span);
    else
      run_groups_narrow<NG, C, kNext>(g, c0, span);
  }

  // Two groups times 3 to kColTileWide columns (batches of sequences,
  // prompt blocks), slice-major: each slice's unpacked weights feed every
  // column before the next slice is loaded, so only the columns' integer
  // dots and float sums stay in registers, not a block's 16 unpacked
  // vectors, and one tile takes 8 columns where the register-resident form
  // (run_groups_narrow) fits 4: the weights are unpacked half as often (5
  // columns: once, not for a 3 + 2 split). At 8 columns the float sums
  // spill, once per block; that measured faster still than 4 + 4. At 2
  // columns the register-resident form is faster.
  // kNext: as run_groups_narrow.
  template <int C, bool kNext>
  void run_pair_wide(int g, int c0, int span) const {
    static_assert(T == TensorType::Q4_0 || T == TensorType::Q8_0);
    const uint8_t* grp[2] = {w + static_cast<size_t>(g) * w_stride, w + static_cast<size_t>(g + span) * w_stride};
    const uint8_t* qs[C];
    const float* ad[C];
    const int32_t* as[C];
    columns(c0, qs, ad, as);
    __m512 acc[2][C];
    for (int i = 0; i < 2; ++i)
      for (int c = 0; c < C; ++c) acc[i][c] = _mm512_setzero_ps();
    const __m512i nib = _mm512_set1_epi8(0x0F);
    for (int64_t b = 0; b < nb; ++b) {
      const size_t pair_off = static_cast<size_t>(b >> 1) * kPairBytes;
      const size_t slice_off = 64 + static_cast<size_t>(b & 1) * kSlices * 64;
      if ((b & 1) == 0) {
        for (int i = 0; i < 2; ++i) {
          if constexpr (kNext)
            prefetch_bytes<kPairBytes, _MM_HINT_T1>(grp[i] + (span == 1 ? 2 : 1) * w_stride + pair_off);
          else
            prefetch_bytes<kPairBytes>(grp[i] + prefetch_offset<2>(pair_off, prefetch_distance<2, C>(), w_stride, span));
        }
      }
      __m512i dot[2][C];
      for (int c = 0; c < C; ++c) {
        const __m512i offset = _mm512_set1_epi32(-(as[c][b] << Traits<T>::kShift));
        dot[0][c] = dot[1][c] = offset;
      }
      for (int m = 0; m < kSlices; ++m) {
        // Q4_0: slice m's low nibbles pair with activation bytes 4m.., its
        // high nibbles with 16 + 4m..; Q8_0: slice m with 4m...
        __m512i lo[2], hi[2];
        for (int i = 0; i < 2; ++i) {
          const __m512i q = _mm512_loadu_si512(grp[i] + pair_off + slice_off + 64 * m);
          if constexpr (T == TensorType::Q4_0) {
            lo[i] = _mm512_and_si512(q, nib);
            hi[i] = _mm512_and_si512(_mm512_srli_epi16(q, 4), nib);
          } else {
            lo[i] = q;
          }
        }
        for (int c = 0; c < C; ++c) {
          const uint8_t* a = qs[c] + static_cast<size_t>(b) * sizeof(BlockQ8_0);
          const __m512i x0 = _mm512_set1_epi32(load_i32(a + 4 * m));
          for (int i = 0; i < 2; ++i) dot[i][c] = _mm512_dpbusd_epi32(dot[i][c], lo[i], x0);
          if constexpr (T == TensorType::Q4_0) {
            const __m512i x1 = _mm512_set1_epi32(load_i32(a + 16 + 4 * m));
            for (int i = 0; i < 2; ++i) dot[i][c] = _mm512_dpbusd_epi32(dot[i][c], hi[i], x1);
          }
        }
      }
      __m512 dw[2];
      for (int i = 0; i < 2; ++i)
        dw[i] = _mm512_cvtph_ps(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(grp[i] + pair_off + static_cast<size_t>(b & 1) * 32)));
      for (int c = 0; c < C; ++c) {
        const __m512 da = _mm512_set1_ps(ad[c][b]);
        for (int i = 0; i < 2; ++i)
          acc[i][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[i][c]), _mm512_mul_ps(dw[i], da), acc[i][c]);
      }
    }
    for (int i = 0; i < 2; ++i) store_group(out, out_stride, nrows, g + i * span, c0, acc[i]);
  }

  // One column over groups g .. g + NG - 1 (P.neighbours), each group's
  // block finished before the next group's is loaded, as in llama.cpp's AMX
  // decode: NG sequential streams for the hardware prefetchers (and P's
  // lines, where it has them, in each: prefetch_offset), and only a block's
  // activation broadcasts and one group's weights in registers.
  template <int NG>
  void run_one_neighbours(int g, int c0) const {
    static_assert(P.touch_every == 0, "neighbour streams do not touch pages");
    const uint8_t* grp = w + static_cast<size_t>(g) * w_stride;
    const uint8_t* qs[1];
    const float* ad[1];
    const int32_t* as[1];
    columns(c0, qs, ad, as);
    __m512 acc[NG];
    for (int i = 0; i < NG; ++i) acc[i] = _mm512_setzero_ps();
    const __m512i nib = _mm512_set1_epi8(0x0F);
    for (int64_t b = 0; b < nb; ++b) {
      const size_t pair_off = static_cast<size_t>(b >> 1) * kPairBytes;
      const size_t slice_off = 64 + static_cast<size_t>(b & 1) * kSlices * 64;
      const uint8_t* a = qs[0] + static_cast<size_t>(b) * sizeof(BlockQ8_0);
      __m512i x[8];
      for (int j = 0; j < 8; ++j) x[j] = _mm512_set1_epi32(load_i32(a + 4 * j));
      const __m512i offset = _mm512_set1_epi32(-(as[0][b] << Traits<T>::kShift));
      const __m512 da = _mm512_set1_ps(ad[0][b]);
      for (int i = 0; i < NG; ++i) {
        const uint8_t* pair = grp + static_cast<size_t>(i) * w_stride + pair_off;
        if constexpr (P.every > 0)
          if ((b & 1) == 0 && (b >> 1) % P.every == 0)
            prefetch_bytes<P.every * static_cast<int>(kPairBytes), P.hint>(
                grp + static_cast<size_t>(i) * w_stride + prefetch_offset<NG>(pair_off, P.distance, w_stride, 1));
        const uint8_t* sl = pair + slice_off;
        __m512i dot;
        if constexpr (T == TensorType::Q4_0) {
          // As one group's tile: high nibbles in place, 16 x the weight.
          __m512i lo = offset, hi = _mm512_setzero_si512();
          for (int m = 0; m < 4; ++m) {
            const __m512i q = _mm512_loadu_si512(sl + 64 * m);
            lo = _mm512_dpbusd_epi32(lo, _mm512_and_si512(q, nib), x[m]);
            hi = _mm512_dpbusd_epi32(hi, _mm512_andnot_si512(nib, q), x[m + 4]);
          }
          dot = _mm512_add_epi32(lo, _mm512_srai_epi32(hi, 4));
        } else {
          __m512i i0 = offset, i1 = _mm512_setzero_si512();
          for (int m = 0; m < 8; m += 2) {
            i0 = _mm512_dpbusd_epi32(i0, _mm512_loadu_si512(sl + 64 * m), x[m]);
            i1 = _mm512_dpbusd_epi32(i1, _mm512_loadu_si512(sl + 64 * m + 64), x[m + 1]);
          }
          dot = _mm512_add_epi32(i0, i1);
        }
        const __m512 dw = _mm512_cvtph_ps(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pair + static_cast<size_t>(b & 1) * 32)));
        acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw, da), acc[i]);
      }
    }
    for (int i = 0; i < NG; ++i) {
      const __m512 group_acc[1] = {acc[i]};
      store_group(out, out_stride, nrows, g + i, c0, group_acc);
    }
  }

  template <int NG, int C, bool kNext>
  void run_groups_narrow(int g, int c0, int span) const {
    const uint8_t* grp[NG];
    for (int i = 0; i < NG; ++i) grp[i] = w + static_cast<size_t>(g + i * span) * w_stride;
    const uint8_t* qs[C];
    const float* ad[C];
    const int32_t* as[C];
    columns(c0, qs, ad, as);
    __m512 acc[NG][C];
    for (int i = 0; i < NG; ++i)
      for (int c = 0; c < C; ++c) acc[i][c] = _mm512_setzero_ps();
    const __m512i nib = _mm512_set1_epi8(0x0F);
    for (int64_t b = 0; b < nb; ++b) {
      const size_t pair_off = static_cast<size_t>(b >> 1) * kPairBytes;
      const size_t slice_off = 64 + static_cast<size_t>(b & 1) * kSlices * 64;
      __m512i W[NG][8];
      __m512 dw[NG];
      for (int i = 0; i < NG; ++i) {
        const uint8_t* pair = grp[i] + pair_off;
        if constexpr (C == 1 || kFewStream) {
          // One column: P's scheme, per stream (P.streams of them, in runs).
          if ((b & 1) == 0) stream_prefetch<P, kPairBytes>(grp[i] + pair_off, b >> 1);
        } else if ((b & 1) == 0) {
          if constexpr (kNext) {
            // Neighbour streams (span 1) continue NG groups on, runs one.
            prefetch_bytes<kPairBytes, _MM_HINT_T1>(grp[i] + (span == 1 ? NG : 1) * w_stride + pair_off);
          } else {
            // Once per pair, its lines ahead in the same stream.
            prefetch_bytes<kPairBytes>(grp[i] + prefetch_offset<NG>(pair_off, prefetch_distance<NG, C>(), w_stride, span));
          }
        }
        const uint8_t* sl = pair + slice_off;
        if constexpr (T == TensorType::Q4_0) {
          // One group: high nibbles in place, q & 0xF0 being 16 x the weight
          // (see below). Two groups shift them down: in place they measured
          // slower there.
          for (int m = 0; m < 4; ++m) {
            const __m512i q = _mm512_loadu_si512(sl + 64 * m);
            W[i][m] = _mm512_and_si512(q, nib);
            W[i][m + 4] = NG == 1 ? _mm512_andnot_si512(nib, q) : _mm512_and_si512(_mm512_srli_epi16(q, 4), nib);
          }
        } else {
          for (int m = 0; m < 8; ++m) W[i][m] = _mm512_loadu_si512(sl + 64 * m);
        }
        dw[i] = _mm512_cvtph_ps(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pair + static_cast<size_t>(b & 1) * 32)));
      }
      for (int c = 0; c < C; ++c) {
        // Both Q4_0 (low nibbles 4j.., high nibbles 16+4(j-4)..) and Q8_0
        // pair W[j] with activation bytes 4j..4j+3.
        const uint8_t* a = qs[c] + static_cast<size_t>(b) * sizeof(BlockQ8_0);
        const __m512i offset = _mm512_set1_epi32(-(as[c][b] << Traits<T>::kShift));
        __m512i dot[NG];
        if constexpr (T == TensorType::Q4_0 && NG == 1) {
          // Two chains: the low nibbles (j 0..3) from the offset, the high
          // nibbles as 16 x the weight (j 4..7), whose sum is exactly 16 x
          // theirs and shifts back once per block.
          __m512i lo = offset, hi = _mm512_setzero_si512();
          for (int j = 0; j < 4; ++j) {
            lo = _mm512_dpbusd_epi32(lo, W[0][j], _mm512_set1_epi32(load_i32(a + 4 * j)));
            hi = _mm512_dpbusd_epi32(hi, W[0][j + 4], _mm512_set1_epi32(load_i32(a + 4 * j + 16)));
          }
          dot[0] = _mm512_add_epi32(lo, _mm512_srai_epi32(hi, 4));
        } else if constexpr (NG == 1) {
          // Two chains, so that one column's 8 vpdpbusd are not one latency chain.
          __m512i i0 = offset, i1 = _mm512_setzero_si512();
          for (int j = 0; j < 8; j += 2) {
            i0 = _mm512_dpbusd_epi32(i0, W[0][j], _mm512_set1_epi32(load_i32(a + 4 * j)));
            i1 = _mm512_dpbusd_epi32(i1, W[0][j + 1], _mm512_set1_epi32(load_i32(a + 4 * j + 4)));
          }
          dot[0] = _mm512_add_epi32(i0, i1);
        } else if (T == TensorType::Q4_0 && C != 2) {
          // Two chains per group (even and odd j), as for one group: measured
          // faster for Q4_0, but slower for Q8_0 and for Q4_0 at 2 columns,
          // which keep one chain per group.
          __m512i odd[NG];
          for (int i = 0; i < NG; ++i) dot[i] = offset, odd[i] = _mm512_setzero_si512();
          for (int j = 0; j < 8; j += 2) {
            const __m512i x0 = _mm512_set1_epi32(load_i32(a + 4 * j));
            const __m512i x1 = _mm512_set1_epi32(load_i32(a + 4 * j + 4));
            for (int i = 0; i < NG; ++i) {
              dot[i] = _mm512_dpbusd_epi32(dot[i], W[i][j], x0);
              odd[i] = _mm512_dpbusd_epi32(odd[i], W[i][j + 1], x1);
            }
          }
          for (int i = 0; i < NG; ++i) dot[i] = _mm512_add_epi32(dot[i], odd[i]);
        } else {
          for (int i = 0; i < NG; ++i) dot[i] = offset;
          for (int j = 0; j < 8; ++j) {
            const __m512i x = _mm512_set1_epi32(load_i32(a + 4 * j));
            for (int i = 0; i < NG; ++i) dot[i] = _mm512_dpbusd_epi32(dot[i], W[i][j], x);
          }
        }
        const __m512 da = _mm512_set1_ps(ad[c][b]);
        for (int i = 0; i < NG; ++i)
          acc[i][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[i]), _mm512_mul_ps(dw[i], da), acc[i][c]);
      }
    }
    for (int i = 0; i < NG; ++i) store_group(out, out_stride, nrows, g + i * span, c0, acc[i]);
  }
};

// As drive, with row groups in pairs when there are 2 to max_pair_cols
// columns. Two streams per thread keep more DRAM reads in flight than one.
// One column reads one stream (kQOne). Q8_0 from 8 columns on does
// better with one group and 8-column tiles: its weights need no unpacking,
// so the wider tile loses nothing and reads the weights once; below that
// its pairs of groups (each broadcast feeding two) measured faster. The
// K-quant tiles stay at one group: Q4_K in pairs measured slower.
template <typename Tile>
void drive_pairs(const Tile& t, int nrows, int ncols, int max_pair_cols) {
  if (ncols == 1 || ncols > max_pair_cols) return drive<kColTile>(t, nrows, ncols);
  const int ngroups = (nrows + kPackRows - 1) / kPackRows;
  for (int cb = 0; cb < ncols; cb += kColBlock) {
    const int n = ncols - cb < kColBlock ? ncols - cb : kColBlock;
    const int g = n >= kWideMinCols ? for_each_stream_tile<2, kColTileWide>(t, 0, ngroups, cb, n, false)
                        : for_each_stream_tile<2, kColTile2>(t, 0, ngroups, cb, n, false);
    if (g < ngroups) for_each_col_tile<kColTile>(t, g, cb, n);
  }
}

// The widest call that a kFewStream kernel reads as one prefetched stream.
// Wider calls of its class run gemm_packed's own tiles: Q4_0's pair tiles
// read 3-4 columns faster than one stream (each broadcast feeds two
// groups); Q8_0's one stream stays faster to 4.
template <TensorType T>
constexpr int kFewStreamMaxCols = T == TensorType::Q4_0 ? 2 : 4;
template <TensorType T, StreamPrefetch P = kQOne<T>, bool kFewStream = false>
void gemm_packed(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride, int ncols,
                 float* out, size_t out_stride) {
  if constexpr (kFewStream) {
    if (ncols > kFewStreamMaxCols<T>) return gemm_packed<T, P>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
  }
  const PackedTile<T, P, kFewStream> t{k / 32, static_cast<const uint8_t*>(w), w_stride, nrows,
                                       static_cast<const uint8_t*>(act), act_stride, q8_0_sums_offset(k), out, out_stride,
                                       ncols < kColBlock};
  static_assert(!(kFewStream && P.neighbours), "neighbour streams are one-column tiles");
  if (ncols == 1 || kFewStream) {
    if constexpr (P.neighbours) {
      // P.streams neighbouring groups side by side, the groups left over alone.
      const int ngroups = (nrows + kPackRows - 1) / kPackRows;
      for (int g = for_each_stream_tile<P.streams, 1>(t, 0, ngroups, 0, ncols, false); g < ngroups; ++g)
        for_each_col_tile<kColTile>(t, g, 0, ncols);
      return;
    } else if (P.streams == 2) {
      // P's two runs side by side (packed_tiles.h), the odd group alone.
      const int ngroups = (nrows + kPackRows - 1) / kPackRows;
      const int g = for_each_stream_tile<2, kColTile2>(t, 0, ngroups, 0, ncols, true);
      if (g < ngroups) for_each_col_tile<kColTile>(t, g, 0, ncols);
      return;
    }
    if (kFewStream) return drive<kColTile>(t, nrows, ncols);
  }
  drive_pairs(t, nrows, ncols, T == TensorType::Q4_0 ? INT_MAX : kColTileWide - 1);
}

// The default Q4_0 / Q8_0 kernels: a few columns (2 to kFewStreamMaxCols,
// sequences decoding together) read one stream, which reads memory faster
// than the per-pair lines of the pair tiles (the variant ".few.pairs"),
// prefetched as the type's one column is (Q4_0: non-temporal bursts;
// Q8_0: T0 twice as far, with page touches); one column and wider calls
// as gemm_packed's defaults.
template <TensorType T>
constexpr StreamPrefetch kQFew = T == TensorType::Q4_0 ? kBurstNta : kT0FarTouch;
template <TensorType T>
void gemm_q_default(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride,
                    int ncols, float* out, size_t out_stride) {
  if (ncols >= 2 && ncols <= kFewStreamMaxCols<T>)
    return gemm_packed<T, kQFew<T>, true>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
  gemm_packed<T>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}

}  // namespace

void gemm_q4_0_packed(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride,
                      int ncols, float* out, size_t out_stride) {
  gemm_q_default<TensorType::Q4_0>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}
void gemm_q8_0_packed(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride,
                      int ncols, float* out, size_t out_stride) {
  gemm_q_default<TensorType::Q8_0>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}

namespace {
// The decode prefetch schemes other than each type's default (top of file)
// as variants for the planner: for one column, and, for Q4_0 / Q8_0, for
// 2-4 columns (a few sequences decoding together): one stream by another
// scheme than the default's (gemm_q_default), or the pair tiles with each
// pair's lines (.few.pairs). (The K-quant tiles of 2-4 columns measured no
// faster reading one stream.)
template <TensorType T, StreamPrefetch P, bool kFewStream = false>
constexpr MatmulKernel kQKernel{TensorType::Q8_0, quantize_q8_0_sums, gemm_packed<T, P, kFewStream>, q8_0_sums_bytes,
                                true};

template <TensorType T, StreamPrefetch P>
constexpr KernelVariant q_one(const char* name) {
  return {name, Isa::avx512, true, 1, 1, &kQKernel<T, P>};
}
template <TensorType T, StreamPrefetch P>
constexpr KernelVariant q_few(const char* name) {
  return {name, Isa::avx512, true, 2, 4, &kQKernel<T, P, true>};
}
template <TensorType T>
constexpr KernelVariant q_pairs(const char* name) {
  return {name, Isa::avx512, true, 2, 4, &kQKernel<T, kQOne<T>>};
}

constexpr KernelVariant kQ4_0Variants[] = {
    q_one<TensorType::Q4_0, kT0>("avx512.packed.q4_0.t0"),
    q_one<TensorType::Q4_0, kT0FarTouch>("avx512.packed.q4_0.t0.far.touch"),
    q_one<TensorType::Q4_0, kT0Near>("avx512.packed.q4_0.t0.near"),
    q_one<TensorType::Q4_0, kT1>("avx512.packed.q4_0.t1"),
    q_one<TensorType::Q4_0, kT1Far>("avx512.packed.q4_0.t1.far"),
    q_one<TensorType::Q4_0, kHw>("avx512.packed.q4_0.hw"),
    q_one<TensorType::Q4_0, kTouch>("avx512.packed.q4_0.touch"),
    q_one<TensorType::Q4_0, kRunsT0>("avx512.packed.q4_0.2s"),
    q_one<TensorType::Q4_0, kRunsT0Near>("avx512.packed.q4_0.2s.near"),
    q_one<TensorType::Q4_0, kRunsT1Far>("avx512.packed.q4_0.2s.t1.far"),
    q_one<TensorType::Q4_0, kNeighbours4Hw>("avx512.packed.q4_0.4n.hw"),
    q_one<TensorType::Q4_0, kNeighbours4T1>("avx512.packed.q4_0.4n.t1"),
    q_one<TensorType::Q4_0, kNeighbours2T0>("avx512.packed.q4_0.2n"),
    q_pairs<TensorType::Q4_0>("avx512.packed.q4_0.few.pairs"),
    q_few<TensorType::Q4_0, kT0Touch>("avx512.packed.q4_0.few.touch"),
    q_few<TensorType::Q4_0, kT0FarTouch>("avx512.packed.q4_0.few.t0.far.touch"),
};
constexpr KernelVariant kQ8_0Variants[] = {
    q_one<TensorType::Q8_0, kT0>("avx512.packed.q8_0.t0"),
    q_one<TensorType::Q8_0, kT0FarTouch>("avx512.packed.q8_0.t0.far.touch"),
    q_one<TensorType::Q8_0, kBurstNta>("avx512.packed.q8_0.nta"),
    q_one<TensorType::Q8_0, kT0Near>("avx512.packed.q8_0.t0.near"),
    q_one<TensorType::Q8_0, kT1>("avx512.packed.q8_0.t1"),
    q_one<TensorType::Q8_0, kT1Far>("avx512.packed.q8_0.t1.far"),
    q_one<TensorType::Q8_0, kHw>("avx512.packed.q8_0.hw"),
    q_one<TensorType::Q8_0, kRunsT0>("avx512.packed.q8_0.2s"),
    q_one<TensorType::Q8_0, kRunsT0Near>("avx512.packed.q8_0.2s.near"),
    q_one<TensorType::Q8_0, kRunsT1Far>("avx512.packed.q8_0.2s.t1.far"),
    q_one<TensorType::Q8_0, kNeighbours4Hw>("avx512.packed.q8_0.4n.hw"),
    q_one<TensorType::Q8_0, kNeighbours4T1>("avx512.packed.q8_0.4n.t1"),
    q_one<TensorType::Q8_0, kNeighbours2T0>("avx512.packed.q8_0.2n"),
    q_pairs<TensorType::Q8_0>("avx512.packed.q8_0.few.pairs"),
    q_few<TensorType::Q8_0, kTouch>("avx512.packed.q8_0.few.touch"),
    q_few<TensorType::Q8_0, kBurstNta>("avx512.packed.q8_0.few.nta"),
};

}  // namespace

const KernelVariant* packed_decode_variants(TensorType t, int* n) {
  switch (t) {
    case TensorType::Q4_0: return listed(kQ4_0Variants, n);
    case TensorType::Q8_0: return listed(kQ8_0Variants, n);
    case TensorType::Q4_K:
    case TensorType::Q6_K: return packed_k_decode_variants(t, n);
    default: *n = 0; return nullptr;
  }
}

}  // namespace brisk::kernels::avx512
