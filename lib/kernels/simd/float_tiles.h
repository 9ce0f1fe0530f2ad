// SPDX-License-Identifier: MIT
// Row-major float weights (F32, F16, BF16) against F32 activations, written
// once over an ISA's vector traits V (kernels/simd/vec_ops.h says how these
// templates are instantiated). Each V::kLanes-wide step loads one vector per
// weight row (converted to f32) and one per activation column, then does
// R x C FMAs; the ISA picks the largest tile its registers hold.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/simd/tile_loops.h"

namespace brisk::kernels::simd {
namespace {

// Weight loaders: V::kLanes consecutive weights of a row from element i as
// f32, and the row tail (n < kLanes elements, m its lanes; the rest reads
// as 0 and no byte past the row is touched).
template <class V>
struct LoadF32 {
  static typename V::F load(const uint8_t* p, int64_t i) { return V::load(reinterpret_cast<const float*>(p) + i); }
  static typename V::F load_tail(const uint8_t* p, int64_t i, int64_t, typename V::Mask m) {
    return V::load_tail(reinterpret_cast<const float*>(p) + i, m);
  }
};
template <class V>
struct LoadF16 {
  static typename V::F load(const uint8_t* p, int64_t i) { return V::load_f16(reinterpret_cast<const uint16_t*>(p) + i); }
  static typename V::F load_tail(const uint8_t* p, int64_t i, int64_t n, typename V::Mask m) {
    return V::load_f16_tail(reinterpret_cast<const uint16_t*>(p) + i, n, m);
  }
};
// bf16 widened exactly, unlike converting the activations down to bf16.
template <class V>
struct LoadBF16 {
  static typename V::F load(const uint8_t* p, int64_t i) { return V::load_bf16(reinterpret_cast<const uint16_t*>(p) + i); }
  static typename V::F load_tail(const uint8_t* p, int64_t i, int64_t n, typename V::Mask m) {
    return V::load_bf16_tail(reinterpret_cast<const uint16_t*>(p) + i, n, m);
  }
};

template <class V, typename L>
struct FloatTile {
  int64_t k;
  const uint8_t* w;
  size_t w_stride;
  const uint8_t* act;
  size_t act_stride;
  float* out;
  size_t out_stride;

  template <int R, int C>
  void run(int r0, int c0) {
    constexpr int W = V::kLanes;
    const uint8_t* wr[R];
    const float* xc[C];
    for (int r = 0; r < R; ++r) wr[r] = w + static_cast<size_t>(r0 + r) * w_stride;
    for (int c = 0; c < C; ++c)
      xc[c] = reinterpret_cast<const float*>(act + static_cast<size_t>(c0 + c) * act_stride);
    typename V::F acc[R][C];
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) acc[r][c] = V::zero();

    int64_t i = 0;
    if constexpr (R * C == 1) {
      // One row and one column: four chains of FMAs, else their latency
      // paces the stream.
      typename V::F more[3] = {V::zero(), V::zero(), V::zero()};
      for (; i + 4 * W <= k; i += 4 * W) {
        acc[0][0] = V::fmadd(L::load(wr[0], i), V::load(xc[0] + i), acc[0][0]);
        for (int u = 0; u < 3; ++u)
          more[u] = V::fmadd(L::load(wr[0], i + (u + 1) * W), V::load(xc[0] + i + (u + 1) * W), more[u]);
      }
      acc[0][0] = V::add(V::add(acc[0][0], more[0]), V::add(more[1], more[2]));
    }
    for (; i + W <= k; i += W) {
      typename V::F x[C];
      for (int c = 0; c < C; ++c) x[c] = V::load(xc[c] + i);
      for (int r = 0; r < R; ++r) {
        const typename V::F wv = L::load(wr[r], i);
        for (int c = 0; c < C; ++c) acc[r][c] = V::fmadd(wv, x[c], acc[r][c]);
      }
    }
    if (i < k) {
      const typename V::Mask m = V::tail_mask(k - i);
      typename V::F x[C];
      for (int c = 0; c < C; ++c) x[c] = V::load_tail(xc[c] + i, m);
      for (int r = 0; r < R; ++r) {
        const typename V::F wv = L::load_tail(wr[r], i, k - i, m);
        for (int c = 0; c < C; ++c) acc[r][c] = V::fmadd(wv, x[c], acc[r][c]);
      }
    }
    for (int c = 0; c < C; ++c)
      for (int r = 0; r < R; ++r) out[static_cast<size_t>(c0 + c) * out_stride + r0 + r] = V::hsum(acc[r][c]);
  }
};

// Decode (one column) walks the rows one by one: a single linear stream the
// hardware prefetcher follows; wider batches take RM x CM tiles.
template <class V, template <class> class L, int RM, int CM>
void gemm_float(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride, int ncols,
                float* out, size_t out_stride) {
  FloatTile<V, L<V>> t{k,          static_cast<const uint8_t*>(w), w_stride, static_cast<const uint8_t*>(act),
                       act_stride, out,                            out_stride};
  if (ncols == 1) {
    for_each_tile<1, 1>(t, nrows, 0, ncols, w_stride);
  } else {
    for_each_tile<RM, CM>(t, nrows, 0, ncols, w_stride);
  }
}

}  // namespace
}  // namespace brisk::kernels::simd
