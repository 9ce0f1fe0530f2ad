// SPDX-License-Identifier: MIT
// Row-major tiles of the 32-weight block types (Q8_0, Q4_0 against Q8_0
// activations; Q4_1 against Q8_1), written once over an ISA's vector traits
// V (kernels/simd/vec_ops.h says how these templates are instantiated).
//
// Lane layout, shared by every ISA: V::kQBlocks blocks per vector, block j
// in 128-bit lane j, int32 slot s of a lane summing weights 4s..4s+3 of the
// block's first half and of its second half. Keeping a block inside one lane
// means one int->float convert and one FMA per (row, column) serve
// kQBlocks blocks: the float work, not the integer dot, is what limits a
// tile otherwise. The ISA supplies what differs (Ops): how one column's
// activations are repacked into that layout, the integer dot step of a
// block group (VNNI vpdpbusd, or vpmaddubsw + vpmaddwd), and per weight
// type a loader (W) that unpacks kQBlocks blocks of a row into it.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/prefetch.h"
#include "kernels/simd/tile_loops.h"

namespace brisk::kernels::simd {
namespace {

enum class QKind { q8_0, q4_0, q4_1 };

// One column's activations for kQBlocks blocks, in lane layout.
template <class V>
struct alignas(sizeof(typename V::I)) QActGroup {
  int8_t lo[sizeof(typename V::I)];  // block j's qs[0..15] at 16j
  int8_t hi[sizeof(typename V::I)];  // block j's qs[16..31] at 16j
  float d[V::kLanes];                // block j's scale in slots 4j..4j+3
  int32_t extra[V::kLanes];          // the offset correction (int32), or Q4_1's float s at slot 4j
};

// One weight row's kQBlocks blocks, unpacked: bytes in lane layout and the
// per-slot scales (and Q4_1's minimum).
template <class V>
struct QWeights {
  typename V::I lo, hi;
  typename V::F d, m;
};

// Ops: template <QKind K> pack_column(src, nb, QActGroup<V>*), the
// column's nb blocks (the last group zero-padded: zero activations and
// scales add nothing); template <QKind K> dot(QWeights, alo, ahi, extra),
// a group's int32 sums with the offset correction applied.
// W: kBlockBytes and template <bool Tail> load(p, nbl), nbl (< kQBlocks
// when Tail) blocks at p, the rest zero, no byte past them read.
template <class V, class Ops, class W, QKind K>
struct QTile {
  static constexpr int kGroupBytes = V::kQBlocks * W::kBlockBytes;
  int64_t ngroups;
  int last_nbl;  // blocks in the last group (1..kQBlocks)
  const uint8_t* w;
  size_t w_stride;
  const QActGroup<V>* act;  // ngroups per column, columns c_base, c_base + 1, ...
  int c_base;
  float* out;
  size_t out_stride;
  size_t pf_dist;  // prefetch this many bytes ahead of each row (next rows)

  template <int R, int C, bool Tail>
  inline void step(const uint8_t* const* wr, const QActGroup<V>* const* ac, int64_t g, int nbl,
                   typename V::F (&acc)[R][C]) const {
    QWeights<V> wg[R];
    for (int r = 0; r < R; ++r) {
      prefetch_bytes<kGroupBytes>(wr[r] + pf_dist + g * kGroupBytes);
      wg[r] = W::template load<Tail>(wr[r] + g * kGroupBytes, nbl);
    }
    for (int c = 0; c < C; ++c) {
      const QActGroup<V>& a = ac[c][g];
      const typename V::I alo = V::load_i_aligned(a.lo);
      const typename V::I ahi = V::load_i_aligned(a.hi);
      const typename V::F ad = V::load_aligned(a.d);
      const typename V::I ax = V::load_i_aligned(a.extra);
      for (int r = 0; r < R; ++r) {
        const typename V::I i = Ops::template dot<K>(wg[r], alo, ahi, ax);
        acc[r][c] = V::fmadd(V::cvt_i32(i), V::mul(wg[r].d, ad), acc[r][c]);
        if constexpr (K == QKind::q4_1) acc[r][c] = V::fmadd(wg[r].m, V::cast_f(ax), acc[r][c]);
      }
    }
  }

  template <int R, int C>
  void run(int r0, int c0) {
    const uint8_t* wr[R];
    const QActGroup<V>* ac[C];
    for (int r = 0; r < R; ++r) wr[r] = w + static_cast<size_t>(r0 + r) * w_stride;
    for (int c = 0; c < C; ++c) ac[c] = act + static_cast<size_t>(c0 + c - c_base) * ngroups;
    typename V::F acc[R][C];
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) acc[r][c] = V::zero();
    const int64_t full = last_nbl == V::kQBlocks ? ngroups : ngroups - 1;
    for (int64_t g = 0; g < full; ++g) step<R, C, false>(wr, ac, g, V::kQBlocks, acc);
    if (full < ngroups) step<R, C, true>(wr, ac, full, last_nbl, acc);
    for (int c = 0; c < C; ++c)
      for (int r = 0; r < R; ++r) out[static_cast<size_t>(c0 + c) * out_stride + r0 + r] = V::hsum(acc[r][c]);
  }
};

constexpr int kQColChunk = 32;

// The activations are repacked first, kQColChunk columns at a time so that
// they stay cache-sized however large the batch is: O(k) per column,
// amortised over all rows, and the tiles then read only aligned vectors.
// Decode (one column) walks the rows one by one; wider batches take RM x CM
// tiles.
template <class V, class Ops, class W, QKind K, int RM, int CM>
void gemm_q(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride, int ncols,
            float* out, size_t out_stride) {
  const int64_t nb = k / 32;
  const int64_t ngroups = (nb + V::kQBlocks - 1) / V::kQBlocks;
  const int chunk = ncols < kQColChunk ? ncols : kQColChunk;
  auto* packed = static_cast<QActGroup<V>*>(V::scratch(static_cast<size_t>(ngroups) * chunk * sizeof(QActGroup<V>)));
  QTile<V, Ops, W, K> t{ngroups,  static_cast<int>(nb - (ngroups - 1) * V::kQBlocks),
                        static_cast<const uint8_t*>(w), w_stride, packed, 0, out, out_stride,
                        prefetch_distance(ncols, w_stride)};
  for (int c0 = 0; c0 < ncols; c0 += chunk) {
    const int c1 = ncols - c0 < chunk ? ncols : c0 + chunk;
    for (int c = c0; c < c1; ++c)
      Ops::template pack_column<K>(static_cast<const uint8_t*>(act) + static_cast<size_t>(c) * act_stride, nb,
                                   packed + static_cast<size_t>(c - c0) * ngroups);
    t.c_base = c0;
    if (ncols == 1) {
      for_each_tile<1, 1>(t, nrows, c0, c1, w_stride);
    } else {
      for_each_tile<RM, CM>(t, nrows, c0, c1, w_stride);
    }
  }
}

}  // namespace
}  // namespace brisk::kernels::simd
