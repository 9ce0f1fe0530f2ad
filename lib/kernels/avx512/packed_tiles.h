// What the packed-layout kernels (matmul_packed*.cpp) share: storing a
// 16-row group's results and walking the columns in tiles. AVX-512 files
// only (see common.h on why these helpers stay internal).
#pragma once
#include "kernels/avx512/common.h"
#include "kernels/packed.h"

namespace brisk::kernels::avx512 {
namespace {

// How far ahead of the current position a one-column packed tile prefetches
// its weight stream (measurements: matmul_packed.cpp, prefetch_distance).
constexpr size_t kPrefetchBytes = 4608;

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

// t.run<cn>(g, c0) with the tile width as a compile-time constant (cn <= C).
template <int C, typename Tile>
inline void dispatch_cols(const Tile& t, int g, int c0, int cn) {
  if constexpr (C > 0) {
    if (cn == C) {
      t.template run<C>(g, c0);
    } else {
      dispatch_cols<C - 1>(t, g, c0, cn);
    }
  }
}

// Group g over columns [c0, c0 + n) in as few tiles of at most kTile columns
// as possible, as even as possible (8 columns: 4 + 4, not 6 + 2): a narrow
// tile unpacks or converts the weights again for little work.
template <int kTile, typename Tile>
inline void for_each_col_tile(const Tile& t, int g, int c0, int n) {
  const int ntiles = (n + kTile - 1) / kTile;
  for (int i = 0; i < ntiles; ++i) {
    const int width = n / ntiles + (i < n % ntiles ? 1 : 0);
    dispatch_cols<kTile>(t, g, c0, width);
    c0 += width;
  }
}

// A tile's NG-group form (run_groups<NG, C>: row groups g .. g + NG - 1 side
// by side, NG weight streams) as a tile of its own for for_each_col_tile.
template <int NG, typename Tile>
struct GroupsTile {
  const Tile& t;
  template <int C>
  void run(int g, int c0) const {
    t.template run_groups<NG, C>(g, c0);
  }
};

// Where a tile of NG row groups prefetches, for the stream of one of them
// now at byte `at` of its group: `distance` further on in the same stream.
// Past the group's end that is the next tile (groups are contiguous), where
// the same stream's counterpart lies NG - 1 groups further.
template <int NG>
inline size_t prefetch_offset(size_t at, size_t distance, size_t w_stride) {
  const size_t ahead = at + distance;
  return NG > 1 && ahead >= w_stride ? ahead + (NG - 1) * w_stride : ahead;
}

}  // namespace
}  // namespace brisk::kernels::avx512
