// SPDX-License-Identifier: MIT
// What the packed-layout kernels (matmul_packed*.cpp) share: storing a
// 16-row group's results, walking the columns in tiles and the row groups
// as several weight streams, and where those streams prefetch. AVX-512 files
// only (see common.h on why these helpers stay internal).
#pragma once
#include "kernels/avx512/common.h"
#include "kernels/packed.h"
#include "kernels/simd/group_loops.h"

namespace brisk::kernels::avx512 {
namespace {

using simd::drive;
using simd::for_each_col_tile;
using simd::kColBlock;
using simd::listed;
using simd::load_i32;

// The base prefetch distance of a packed weight stream; each tile kind
// scales it (measurements: matmul_packed.cpp, prefetch_distance).
constexpr size_t kPrefetchBytes = 4608;

// How a one-column (decode) tile prefetches its weights: a template argument
// of the packed kernels, so that each scheme is a kernel of its own that the
// planner can time (kernels/variants.h). Which one reads fastest depends on
// the machine (its prefetchers, its miss buffers, its hypervisor's paging).
// A step is a tile's unit of weights: a Q4_0/Q8_0 pair of blocks, a K-quant
// super-block, a 64-byte F16/BF16 line.
struct StreamPrefetch {
  int every = 1;                    // at steps that are multiples of this, the lines of
  PrefetchHint hint = _MM_HINT_T0;  //   `every` steps with this hint,
  int distance = static_cast<int>(kPrefetchBytes);  //   this many bytes ahead; every = 0: no line prefetch
  int touch_every = 0;              // at multiples of this, touch the pages of that many steps
  int touch_ahead = 0;              //   from this far + kPageAheadBytes ahead (prefetch.h); 0: none
  int streams = 1;                  // weight streams per thread, side by side: 1, 2 or 4
  bool neighbours = false;          //   as neighbouring groups (packed Q tiles), else as runs (for_each_stream_tile)
};

// The prefetches of StreamPrefetch P at step `step`, whose weights start at `at`.
template <StreamPrefetch P, size_t StepBytes>
inline void stream_prefetch(const uint8_t* at, int64_t step) {
  if constexpr (P.every > 0)
    if (step % P.every == 0) prefetch_bytes<static_cast<int>(P.every * StepBytes), P.hint>(at + P.distance);
  if constexpr (P.touch_every > 0)
    if (step % P.touch_every == 0) touch_pages_ahead(at + P.touch_ahead, P.touch_every * StepBytes);
}

// Row group g's 16 results for one column at o (rows past nrows are not written).
inline void store_group_column(float* o, int nrows, int g, __m512 v) {
  const int valid = nrows - g * kPackRows;
  if (valid >= kPackRows) {
    _mm512_storeu_ps(o, v);
  } else {
    _mm512_mask_storeu_ps(o, lane_mask(valid), v);
  }
}

// Row group g's results for columns [c0, c0 + C).
template <int C>
inline void store_group(float* out, size_t out_stride, int nrows, int g, int c0, const __m512 (&acc)[C]) {
  for (int c = 0; c < C; ++c)
    store_group_column(out + static_cast<size_t>(c0 + c) * out_stride + static_cast<size_t>(g) * kPackRows, nrows, g,
                       acc[c]);
}

// One column (decode) reads one stream per thread as fast as memory allows;
// how to prefetch it is a machine's matter (hardware prefetchers, miss
// buffers, the hypervisor's paging), so each scheme below is a kernel of its
// own that the planner can time (kernels/variants.h; the tables end
// matmul_packed*.cpp). Steps are Q4_0/Q8_0 pairs of blocks and K-quant
// super-blocks. With two or more columns a tile prefetches a pair's lines
// per pair (prefetch_distance in matmul_packed.cpp).
constexpr int kD = static_cast<int>(kPrefetchBytes);
constexpr StreamPrefetch kT0{1, _MM_HINT_T0, kD, 0, 0, 1};          // a step's lines per step, into L1
constexpr StreamPrefetch kT0Near{1, _MM_HINT_T0, kD / 2, 0, 0, 1};  //   half as far
constexpr StreamPrefetch kT0Touch{1, _MM_HINT_T0, kD, 1, kD, 1};    //   and the pages ahead
constexpr StreamPrefetch kT0FarTouch{1, _MM_HINT_T0, 2 * kD, 1, kD, 1};  //   twice as far, and the pages
constexpr StreamPrefetch kT1{1, _MM_HINT_T1, kD, 0, 0, 1};          // into L2 only
constexpr StreamPrefetch kT1Far{1, _MM_HINT_T1, 4 * kD, 0, 0, 1};   //   4 times as far
constexpr StreamPrefetch kHw{0, _MM_HINT_T0, 0, 0, 0, 1};           // the hardware prefetchers alone
constexpr StreamPrefetch kTouch{0, _MM_HINT_T0, 0, 1, kD, 1};       // page touches alone
constexpr StreamPrefetch kRunsT0{1, _MM_HINT_T0, kD, 0, 0, 2};      // two runs per thread, T0
constexpr StreamPrefetch kRunsT0Near{1, _MM_HINT_T0, kD / 2, 0, 0, 2};
constexpr StreamPrefetch kRunsT1Far{1, _MM_HINT_T1, 4 * kD, 0, 0, 2};
// Four neighbouring groups side by side, the hardware prefetchers alone: the
// access pattern of llama.cpp's AMX decode, whose memory reads keep up where
// software prefetches into L1 hold the core's few miss buffers.
constexpr StreamPrefetch kNeighbours4Hw{0, _MM_HINT_T0, 0, 0, 0, 4, true};
constexpr StreamPrefetch kNeighbours4T1{1, _MM_HINT_T1, kD, 0, 0, 4, true};  // each stream's lines into L2
// Two neighbouring groups, each pair's lines T0 ahead in its stream: how the
// two-column pair tiles read (matmul_packed.cpp, drive_pairs), for one column.
constexpr StreamPrefetch kNeighbours2T0{1, _MM_HINT_T0, kD, 0, 0, 2, true};
// Every kBurstPairs pairs, the next kBurstPairs pairs' lines non-temporal
// (prefetchnta, the lines are read once) and their pages.
constexpr int kBurstPairs = 4;
constexpr StreamPrefetch kBurstNta{kBurstPairs, _MM_HINT_NTA, kD, kBurstPairs, kD, 1};

// Within a block of kColBlock columns (simd/group_loops.h), tiles of up to
// 8 columns reuse each block's unpacked weights from registers (8 measured
// faster than 4 or 6: the unpacking is paid once instead of twice).
constexpr int kColTile = 8;

// A tile's NG-stream form (run_groups<NG, C>: row groups g, g + span, ...,
// g + (NG - 1) * span side by side) as a tile of its own for for_each_col_tile.
template <int NG, typename Tile>
struct GroupsTile {
  const Tile& t;
  int span;
  template <int C>
  void run(int g, int c0) const {
    t.template run_groups<NG, C>(g, c0, span);
  }
};

// Row groups [g0, g1) times columns [c0, c0 + n) as NG weight streams read
// side by side. Returns the first group not done: the groups left over
// (fewer than NG) are the caller's. The streams are either
//  - runs (span = (g1 - g0) / NG): stream i takes the contiguous groups
//    [g0 + i * span, g0 + (i + 1) * span), so each thread reads NG long
//    sequential streams, or
//  - neighbours (span = 1): groups g .. g + NG - 1, then the next NG, so
//    every stream jumps ahead by NG - 1 groups at each group's end.
// Runs keep the hardware prefetcher on long streams; with neighbours each
// stream restarts every group (18 KB of Q4_0 at 2048 columns). The F16/BF16
// tiles read runs, which measured faster for them. The quantized tiles use
// neighbours: Q4_0 at 4 columns and Q8_0 at 2 measured slower in runs, and
// one column reads a single stream (matmul_packed.cpp, kQOne).
template <int NG, int kTile, typename Tile>
int for_each_stream_tile(const Tile& t, int g0, int g1, int c0, int n, bool runs) {
  const int span = runs ? (g1 - g0) / NG : 1;
  if (span == 0) return g0;
  const GroupsTile<NG, Tile> streams{t, span};
  if (runs) {
    for (int g = g0; g < g0 + span; ++g) for_each_col_tile<kTile>(streams, g, c0, n);
    return g0 + NG * span;
  }
  int g = g0;
  for (; g + NG <= g1; g += NG) for_each_col_tile<kTile>(streams, g, c0, n);
  return g;
}

// Where stream i of an NG-stream tile prefetches, now at byte `at` of its
// group: `distance` further on in the same stream. In runs that is simply
// further on (the stream's groups are contiguous); for neighbours, past the
// group's end it is the next tile's counterpart, NG - 1 groups further.
template <int NG>
inline size_t prefetch_offset(size_t at, size_t distance, size_t w_stride, int span) {
  const size_t ahead = at + distance;
  return NG > 1 && span == 1 && ahead >= w_stride ? ahead + (NG - 1) * w_stride : ahead;
}

}  // namespace
}  // namespace brisk::kernels::avx512
