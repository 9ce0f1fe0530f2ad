// SPDX-License-Identifier: MIT
// Fused attention of one KV head and the query heads that share it
// (kernels/vec.h, AttendArgs), written once over an ISA's vector traits V
// (kernels/simd/vec_ops.h says how these templates are instantiated) for a
// head dimension of NS vectors. Versus the reference's row-at-a-time calls:
//
//  - scores: each key row is converted in registers, a vector at a time,
//    and each vector feeds the dot products of up to 8 heads; one reduction
//    tree (V::reduce8) turns the 8 heads' vectors into 8 sums, stored as one
//    8-float vector;
//  - softmax: the scores (position-major, stride padded to a divisor of 16)
//    walked as one flat array of whole vectors;
//  - values: a few heads at a time accumulate a block of their outputs in
//    registers, each value vector loaded feeding all of them.
#pragma once
#include <math.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/tensor_type.h"
#include "kernels/prefetch.h"
#include "kernels/vec.h"

namespace brisk::kernels::simd {
namespace {

// Values [W s, W s + W) of a cache row (W = V::kLanes) as floats.
template <class V, TensorType T>
inline typename V::F load_slice(const uint8_t* row, int s) {
  constexpr int W = V::kLanes;
  if constexpr (T == TensorType::F32) {
    return V::load(reinterpret_cast<const float*>(row) + W * s);
  } else if constexpr (T == TensorType::F16) {
    return V::load_f16(reinterpret_cast<const uint16_t*>(row) + W * s);
  } else {  // Q8_0: 34-byte blocks of 32 values, 32 / W slices each
    constexpr int kPer = 32 / W;
    const uint8_t* b = row + 34 * (s / kPer);
    uint16_t d;
    std::memcpy(&d, b, 2);
    return V::mul(V::set1(V::h2f(d)), V::load_i8(reinterpret_cast<const int8_t*>(b + 2) + W * (s % kPer)));
  }
}

// Bytes of one cache row of hd values.
template <TensorType T>
constexpr int attend_row_bytes(int hd) {
  return T == TensorType::F32 ? 4 * hd : T == TensorType::F16 ? 2 * hd : 34 * (hd / 32);
}

// The cache rows of one sequence and head are a few hundred bytes apart and
// read once per step, long after the weights streamed through the caches
// evicted them: a few KB per head, too short a stream for the hardware
// prefetcher to hide DRAM latency. So the first kAttendAhead rows of K and
// V are requested up front, and while the scores walk the keys, the key and
// value rows kAttendAhead positions on (the values are then in cache for
// their pass; prefetches past the last row are harmless hints).
constexpr int kAttendAhead = 32;

// The scores of query heads [h0, h0 + NH) (NH <= 8) against key rows
// [0, n_pos), to out[p * S + j], prefetching the key and value rows
// kAttendAhead on when asked. A function of its own, with restrict
// parameters (GCC honours restrict reliably on parameters only) and a
// constant head count: then the compiler keeps most of the queries in
// registers across the loop and runs it without branches. Written inline
// over AttendArgs, the queries were reloaded after every store to the
// scores (which might have aliased them) and a run-time head count kept its
// branches, which measured markedly slower.
template <class V, TensorType KT, TensorType VT, int NS, int NH, bool kPrefetch, bool kMasked>
__attribute__((noinline)) void score_heads(const float* __restrict q, const uint8_t* k, size_t k_stride,
                                           const uint8_t* v, size_t v_stride, int n_pos, size_t S, float scale_f,
                                           float* __restrict out) {
  constexpr int W = V::kLanes, hd = NS * W;
  const typename V::F8 scale = V::set1_8(scale_f);
  for (int p = 0; p < n_pos; ++p) {
    if constexpr (kPrefetch) {
      prefetch_bytes<attend_row_bytes<KT>(hd)>(k + static_cast<size_t>(p + kAttendAhead) * k_stride);
      prefetch_bytes<attend_row_bytes<VT>(hd)>(v + static_cast<size_t>(p + kAttendAhead) * v_stride);
    }
    const uint8_t* row = k + static_cast<size_t>(p) * k_stride;
    typename V::F acc[8];
    for (int j = 0; j < 8; ++j) acc[j] = V::zero();
    for (int s = 0; s < NS; ++s) {
      const typename V::F x = load_slice<V, KT>(row, s);
      for (int j = 0; j < NH; ++j) acc[j] = V::fmadd(V::load(q + j * hd + W * s), x, acc[j]);
    }
    const typename V::F8 r = V::mul8(V::reduce8(acc), scale);
    if constexpr (kMasked) {
      V::store8_first(out + static_cast<size_t>(p) * S, r, NH);
    } else {
      // All 8 lanes: past NH they are zeros, the padding of this position's
      // scores and then the start of the next position's, which its own
      // store overwrites (the scratch has 8 floats of slack for the last).
      V::store8(out + static_cast<size_t>(p) * S, r);
    }
  }
}

template <class V, TensorType KT, TensorType VT, int NS, int NH>
void score_chunk(const AttendArgs& a, int h0, int S) {
  const bool pf = h0 == 0;  // the first pass over the keys prefetches for all
  // Masked only where the next lanes hold scores already made: the last,
  // partial chunk of more than 16 heads (S == G).
  const bool masked = NH < 8 && S > 16;
  auto run = pf ? (masked ? score_heads<V, KT, VT, NS, NH, true, true> : score_heads<V, KT, VT, NS, NH, true, false>)
                : (masked ? score_heads<V, KT, VT, NS, NH, false, true> : score_heads<V, KT, VT, NS, NH, false, false>);
  run(a.q + h0 * NS * V::kLanes, a.k, a.k_stride, a.v, a.v_stride, a.n_pos, static_cast<size_t>(S), a.scale,
      a.scores + h0);
}

// scores[p * S + h] for every position and head (zeros in the padding up to
// the stride S), 8 heads at a time.
template <class V, TensorType KT, TensorType VT, int NS>
void scores(const AttendArgs& a, int S) {
  for (int h0 = 0; h0 < a.group; h0 += 8) {
    switch (a.group - h0 < 8 ? a.group - h0 : 8) {
      case 1: score_chunk<V, KT, VT, NS, 1>(a, h0, S); break;
      case 2: score_chunk<V, KT, VT, NS, 2>(a, h0, S); break;
      case 3: score_chunk<V, KT, VT, NS, 3>(a, h0, S); break;
      case 4: score_chunk<V, KT, VT, NS, 4>(a, h0, S); break;
      case 5: score_chunk<V, KT, VT, NS, 5>(a, h0, S); break;
      case 6: score_chunk<V, KT, VT, NS, 6>(a, h0, S); break;
      case 7: score_chunk<V, KT, VT, NS, 7>(a, h0, S); break;
      default: score_chunk<V, KT, VT, NS, 8>(a, h0, S); break;
    }
  }
}

// Lane l of v combined (max or add) with lanes l + S, l + 2S, ... (mod W):
// every lane then holds its head's total (lane l = head l % S; S divides W).
template <class V, bool kMax>
inline typename V::F fold_heads(typename V::F v, int S) {
  for (int s = S; s < V::kLanes; s *= 2) {
    const typename V::F r = V::rotate_lanes(v, s);
    v = kMax ? V::max(v, r) : V::add(v, r);
  }
  return v;
}

// Softmax over positions of scores[p * S + h] for S dividing 16: the
// n_pos * S scores are walked as one flat array of full vectors, so no two
// accesses overlap. (One masked vector per position would read each
// position right after the previous one's store to the same 64 bytes, which
// stalls on store forwarding.) With 8 lanes and S == 16, even and odd
// vectors hold heads 0-7 and 8-15 (P == 2 parts); otherwise every vector's
// lane l holds head l % S. Leaves exp(s - max) in the scores and 1 / sum
// per head in inv[0..S).
template <class V>
void softmax_flat(float* scores, int n_pos, int S, float* inv) {
  using F = typename V::F;
  constexpr int W = V::kLanes, P = 16 / W;
  const int64_t n = static_cast<int64_t>(n_pos) * S;
  const int64_t full = n / W * W;
  const typename V::Mask tail = V::tail_mask(n - full);
  const bool has_tail = n > full;
  const F lowest = V::set1(-INFINITY);
  // Maxima of even and odd vectors apart (two chains).
  F mx[2] = {lowest, lowest};
  int64_t i = 0;
  for (; i + 2 * W <= full; i += 2 * W) {
    mx[0] = V::max(mx[0], V::load(scores + i));
    mx[1] = V::max(mx[1], V::load(scores + i + W));
  }
  if (i < full) mx[0] = V::max(mx[0], V::load(scores + i));
  if (has_tail) mx[(full / W) & 1] = V::max(mx[(full / W) & 1], V::load_tail_or(scores + full, tail, lowest));
  const bool whole = P == 1 || S <= W;  // every vector holds every head
  F m[P];
  if (whole) {
    const F f = fold_heads<V, true>(V::max(mx[0], mx[1]), S);
    for (int h = 0; h < P; ++h) m[h] = f;
  } else {
    for (int h = 0; h < P; ++h) m[h] = mx[h];
  }
  F sum[P];
  for (int h = 0; h < P; ++h) sum[h] = V::zero();
  for (i = 0; i + P * W <= full; i += P * W) {
    for (int h = 0; h < P; ++h) {
      const F e = V::exp_nonpos(V::sub(V::load(scores + i + h * W), m[h]));
      V::store(scores + i + h * W, e);
      sum[h] = V::add(sum[h], e);
    }
  }
  if (i < full) {  // P == 2 and an odd number of whole vectors
    const F e = V::exp_nonpos(V::sub(V::load(scores + i), m[0]));
    V::store(scores + i, e);
    sum[0] = V::add(sum[0], e);
  }
  if (has_tail) {
    const int h = static_cast<int>((full / W) % P);
    const F e = V::zero_outside(V::exp_nonpos(V::sub(V::load_tail(scores + full, tail), m[h])), tail);
    V::store_tail(scores + full, tail, e);
    sum[h] = V::add(sum[h], e);
  }
  const F one = V::set1(1.0f);
  if (whole) {
    F s = sum[0];
    for (int h = 1; h < P; ++h) s = V::add(s, sum[h]);
    V::store(inv, V::div(one, fold_heads<V, false>(s, S)));
  } else {
    for (int h = 0; h < P; ++h) V::store(inv + h * W, V::div(one, sum[h]));
  }
}

// out[j] = r[j * r_step] * sum_p w[p * S + j] V[p] for NH heads and the
// value vectors [s0, s0 + SB) of their outputs: each vector loaded feeds NH
// accumulators in registers. With kStage, the rows are converted here and
// stored as floats to staged (n_pos rows of NS vectors) for the heads'
// later passes, which read them with VT == F32.
template <class V, TensorType VT, int NS, int NH, int SB, bool kStage>
__attribute__((noinline)) void value_block(const uint8_t* v, size_t v_stride, const float* __restrict w, size_t S,
                                           int n_pos, int s0, const float* __restrict r, int r_step,
                                           float* __restrict out, float* __restrict staged) {
  constexpr int W = V::kLanes, hd = NS * W;
  typename V::F acc[NH][SB];
  for (int j = 0; j < NH; ++j)
    for (int i = 0; i < SB; ++i) acc[j][i] = V::zero();
  for (int p = 0; p < n_pos; ++p) {
    const uint8_t* row = v + static_cast<size_t>(p) * v_stride;
    typename V::F x[SB];
    for (int i = 0; i < SB; ++i) x[i] = load_slice<V, VT>(row, s0 + i);
    if constexpr (kStage)
      for (int i = 0; i < SB; ++i) V::store(staged + static_cast<size_t>(p) * hd + W * (s0 + i), x[i]);
    for (int j = 0; j < NH; ++j) {
      const typename V::F wj = V::set1(w[static_cast<size_t>(p) * S + j]);
      for (int i = 0; i < SB; ++i) acc[j][i] = V::fmadd(wj, x[i], acc[j][i]);
    }
  }
  for (int j = 0; j < NH; ++j) {
    const typename V::F rj = V::set1(r[j * r_step]);
    for (int i = 0; i < SB; ++i) V::store(out + j * hd + W * (s0 + i), V::mul(acc[j][i], rj));
  }
}

// Heads [h, h + NH) over all their output vectors, SB at a time, from the
// cache rows (VT) or, with staged_rows, from the floats of v_rows.
template <class V, TensorType VT, int NS, int NH, int SB, bool kStage>
void value_heads(const uint8_t* v, size_t v_stride, bool staged_rows, const float* w, size_t S, int n_pos,
                 const float* r, int r_step, float* out, float* staged) {
  for (int s0 = 0; s0 < NS; s0 += SB) {
    if (staged_rows) {
      value_block<V, TensorType::F32, NS, NH, SB, false>(v, v_stride, w, S, n_pos, s0, r, r_step, out, nullptr);
    } else {
      value_block<V, VT, NS, NH, SB, kStage>(v, v_stride, w, S, n_pos, s0, r, r_step, out, staged);
    }
  }
}

// Every head's output, HB heads at a time (the last pass the rest). With
// more than one pass and a cache type that needs converting, the first pass
// converts each value row once into v_rows, and the others read those
// floats (a Q8_0 row costs ~4x an F16 one). Head h's scale is r[h * r_step].
template <class V, TensorType VT, int NS>
void values(const AttendArgs& a, size_t S, const float* r, int r_step) {
  constexpr int W = V::kLanes, hd = NS * W;
  // SB vectors of HB heads' outputs plus SB value vectors stay in registers.
  constexpr int SB = NS < V::kValueVectors ? NS : V::kValueVectors;
  constexpr int HB = V::kValueAccumulators / SB;
  static_assert(HB >= 1 && HB <= 4);
  const int G = a.group;
  const bool stage = G > HB && VT != TensorType::F32 && a.v_rows != nullptr;
  for (int h = 0; h < G; h += HB) {
    const bool staged_rows = stage && h > 0;
    const uint8_t* v = staged_rows ? reinterpret_cast<const uint8_t*>(a.v_rows) : a.v;
    const size_t v_stride = staged_rows ? static_cast<size_t>(hd) * sizeof(float) : a.v_stride;
    const float* w = a.scores + h;
    const float* rh = r + h * r_step;
    float* out = a.out + h * hd;
    const int nh = G - h < HB ? G - h : HB;
    if (nh == HB) {
      if (stage && h == 0) {
        value_heads<V, VT, NS, HB, SB, true>(v, v_stride, false, w, S, a.n_pos, rh, r_step, out, a.v_rows);
      } else {
        value_heads<V, VT, NS, HB, SB, false>(v, v_stride, staged_rows, w, S, a.n_pos, rh, r_step, out, nullptr);
      }
      continue;
    }
    // The last, partial pass (never the first when staging).
    if constexpr (HB > 1)
      if (nh == 1) value_heads<V, VT, NS, 1, SB, false>(v, v_stride, staged_rows, w, S, a.n_pos, rh, r_step, out, nullptr);
    if constexpr (HB > 2)
      if (nh == 2) value_heads<V, VT, NS, 2, SB, false>(v, v_stride, staged_rows, w, S, a.n_pos, rh, r_step, out, nullptr);
    if constexpr (HB > 3)
      if (nh == 3) value_heads<V, VT, NS, 3, SB, false>(v, v_stride, staged_rows, w, S, a.n_pos, rh, r_step, out, nullptr);
  }
}

template <class V, TensorType KT, TensorType VT, int NS>
void attend_impl(const AttendArgs& a) {
  constexpr int hd = NS * V::kLanes;
  const int G = a.group;
  // Scores position-major: scores[p * S + h], the stride S padded up to a
  // divisor of 16 (kernels/vec.h, attend_scores_stride) so that the softmax
  // walks them as whole vectors.
  const int S = attend_scores_stride(G);
  for (int p = 0; p < kAttendAhead && p < a.n_pos; ++p) {
    prefetch_bytes<attend_row_bytes<KT>(hd)>(a.k + static_cast<size_t>(p) * a.k_stride);
    prefetch_bytes<attend_row_bytes<VT>(hd)>(a.v + static_cast<size_t>(p) * a.v_stride);
  }
  scores<V, KT, VT, NS>(a, S);
  // Softmax per head; the 1/sum is applied to the outputs.
  alignas(64) float inv[16];
  if (16 % S == 0) {
    softmax_flat<V>(a.scores, a.n_pos, S, inv);
  } else {  // more than 16 heads: S == G, one head at a time, normalised
    softmax_heads(a.scores, a.n_pos, G);
  }
  const float one = 1.0f;
  const bool normalised = 16 % S != 0;
  values<V, VT, NS>(a, static_cast<size_t>(S), normalised ? &one : inv, normalised ? 0 : 1);
}

template <class V, TensorType KT, int NS>
bool attend_with_v(const AttendArgs& a) {
  switch (a.v_type) {
    case TensorType::F16: attend_impl<V, KT, TensorType::F16, NS>(a); return true;
    case TensorType::F32: attend_impl<V, KT, TensorType::F32, NS>(a); return true;
    case TensorType::Q8_0: attend_impl<V, KT, TensorType::Q8_0, NS>(a); return true;
    default: return false;
  }
}

// Fused attention for a head dimension of NS vectors with F32, F16 or Q8_0
// cache rows; false for other types (the caller runs the reference).
template <class V, int NS>
bool attend_fused(const AttendArgs& a) {
  if (a.n_pos <= 0) return false;
  switch (a.k_type) {
    case TensorType::F16: return attend_with_v<V, TensorType::F16, NS>(a);
    case TensorType::F32: return attend_with_v<V, TensorType::F32, NS>(a);
    case TensorType::Q8_0: return attend_with_v<V, TensorType::Q8_0, NS>(a);
    default: return false;
  }
}

}  // namespace
}  // namespace brisk::kernels::simd
