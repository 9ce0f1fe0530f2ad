// SPDX-License-Identifier: MIT
// The loops that cover a gemm's rows x columns with register tiles, shared
// by every ISA's row-major kernels (no intrinsics: a Tile's run<R, C> holds
// them). In an anonymous namespace, so each file's copy is its own,
// compiled with its folder's flags (avx512/common.h: ODR).
#pragma once
#include <cstddef>

namespace brisk::kernels::simd {
namespace {

// Calls tile.run<rn, cn>(r, c) for runtime rn <= RM, cn <= CM, so the
// inner loops always have compile-time trip counts (registers, no spills).
template <int R, int C, typename Tile>
inline void dispatch_cols(Tile& tile, int r, int c, int cn) {
  if constexpr (C > 0) {
    if (cn == C) {
      tile.template run<R, C>(r, c);
    } else {
      dispatch_cols<R, C - 1>(tile, r, c, cn);
    }
  }
}
template <int R, int C, typename Tile>
inline void dispatch_tile(Tile& tile, int r, int c, int rn, int cn) {
  if constexpr (R > 0) {
    if (rn == R) {
      dispatch_cols<R, C>(tile, r, c, cn);
    } else {
      dispatch_tile<R - 1, C>(tile, r, c, rn, cn);
    }
  }
}

// Covers rows [0, nrows) x columns [c_begin, c_end) with tiles of at most
// RM x CM. Loop order, innermost last: row block, column group, row group.
// A column group's activations (a few KB per column) stay in L1 while the
// row groups pass; a row block is sized so its weights (~192 KB) stay in L2
// while the column groups pass. Decode (one column) degenerates to a single
// linear pass over the rows.
template <int RM, int CM, typename Tile>
inline void for_each_tile(Tile& tile, int nrows, int c_begin, int c_end, size_t row_bytes) {
  int rb = static_cast<int>((size_t{192} << 10) / (row_bytes ? row_bytes : 1));
  rb = rb < RM ? RM : rb - rb % RM;
  for (int r0 = 0; r0 < nrows; r0 += rb) {
    const int r1 = nrows - r0 < rb ? nrows : r0 + rb;
    for (int c = c_begin; c < c_end; c += CM) {
      const int cn = c_end - c < CM ? c_end - c : CM;
      for (int r = r0; r < r1; r += RM) {
        const int rn = r1 - r < RM ? r1 - r : RM;
        dispatch_tile<RM, CM>(tile, r, c, rn, cn);
      }
    }
  }
}

}  // namespace
}  // namespace brisk::kernels::simd
