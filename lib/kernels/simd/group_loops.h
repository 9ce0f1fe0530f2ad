// SPDX-License-Identifier: MIT
// The loops that cover a packed-layout gemm (kernels/packed.h: 16-row
// groups) with column tiles, shared by every ISA's packed kernels (no
// intrinsics: a Tile's run<C>(g, c0) holds them). In an anonymous
// namespace, so each file's copy is its own, compiled with its folder's
// flags (avx512/common.h: ODR). Include only from the ISA folders.
#pragma once
#include <cstdint>
#include <cstring>

#include "kernels/packed.h"
#include "quant/blocks.h"

namespace brisk::kernels {
struct KernelVariant;  // kernels/variants.h
}

namespace brisk::kernels::simd {
namespace {

// Columns are taken in blocks whose activations stay in L2 (a few KB per
// column) while the row groups pass.
constexpr int kColBlock = 32;

// t.run<cn>(g, c0) with the tile width as a compile-time constant (cn <= C).
template <int C, typename Tile>
inline void dispatch_group_cols(const Tile& t, int g, int c0, int cn) {
  if constexpr (C > 0) {
    if (cn == C) {
      t.template run<C>(g, c0);
    } else {
      dispatch_group_cols<C - 1>(t, g, c0, cn);
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
    dispatch_group_cols<kTile>(t, g, c0, width);
    c0 += width;
  }
}

// Every row group times the columns, kColBlock columns at a time, in
// tiles of up to kTile.
template <int kTile, typename Tile>
void drive(const Tile& t, int nrows, int ncols) {
  const int ngroups = (nrows + kPackRows - 1) / kPackRows;
  for (int cb = 0; cb < ncols; cb += kColBlock) {
    const int n = ncols - cb < kColBlock ? ncols - cb : kColBlock;
    for (int g = 0; g < ngroups; ++g) for_each_col_tile<kTile>(t, g, cb, n);
  }
}

// A file's table of variants and its length (the kernels/variants.h hooks).
template <size_t N>
const KernelVariant* listed(const KernelVariant (&v)[N], int* n) {
  *n = static_cast<int>(N);
  return v;
}

// What every ISA's K-quant tiles read: packed super-blocks (kernels/packed.h)
// against columns of Q8_K activations.
struct KTile {
  int64_t nsb;  // super-blocks per row
  const uint8_t* w;
  size_t w_stride;  // bytes per row group
  int nrows;
  const uint8_t* act;
  size_t act_stride;
  float* out;
  size_t out_stride;

  const uint8_t* group(int g) const { return w + static_cast<size_t>(g) * w_stride; }
  template <int C>
  void columns(int c0, const quant::BlockQ8_K* (&a)[C]) const {
    for (int c = 0; c < C; ++c)
      a[c] = reinterpret_cast<const quant::BlockQ8_K*>(act + static_cast<size_t>(c0 + c) * act_stride);
  }
};

// 4 bytes at p (an activation group), unaligned.
inline int32_t load_i32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace
}  // namespace brisk::kernels::simd
