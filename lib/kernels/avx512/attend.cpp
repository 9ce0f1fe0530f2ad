// SPDX-License-Identifier: MIT
// Fused AVX-512 attention for one KV head and the query heads that share it
// (kernels/vec.h, AttendArgs). Versus the reference's row-at-a-time calls:
// each cache row is converted in registers, not through memory; the scores of
// 8 heads are reduced together by one shuffle tree instead of 8 horizontal
// sums; and values are accumulated in registers for several heads at once.
// Handles head_dim 64 or 128 with F32, F16 or Q8_0 cache rows.
#include <math.h>

#include "kernels/avx512/common.h"
#include "kernels/vec.h"

namespace brisk::kernels::avx512 {

namespace {

// One cache row of 16 * NV values as NV float vectors.
template <TensorType T, int NV>
inline void load_row(const uint8_t* p, __m512 (&v)[NV]) {
  for (int i = 0; i < NV; ++i) {
    if constexpr (T == TensorType::F32) {
      v[i] = _mm512_loadu_ps(reinterpret_cast<const float*>(p) + 16 * i);
    } else if constexpr (T == TensorType::F16) {
      v[i] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 * i)));
    } else {  // Q8_0: 34-byte blocks of 32, two vectors each
      const uint8_t* b = p + 34 * (i / 2);
      const __m512i q = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2 + 16 * (i % 2))));
      v[i] = _mm512_mul_ps(_mm512_set1_ps(h2f(load_u16(b))), _mm512_cvtepi32_ps(q));
    }
  }
}

// Bytes of one cache row of 16 * NV values.
template <TensorType T, int NV>
constexpr int row_bytes_of() {
  return T == TensorType::F32 ? 64 * NV : T == TensorType::F16 ? 32 * NV : 34 * (NV / 2);
}

// The cache rows of one sequence and head are a few hundred bytes apart and
// read once per step, long after the weights streamed through the caches
// evicted them: a few KB per head, too short a stream for the hardware
// prefetcher to hide DRAM latency. So the first kAhead rows of K and V are
// requested up front, and while the scores walk the keys, the key and value
// rows kAhead positions on (the values are then in cache for their pass;
// prefetches past the last row are harmless hints).
constexpr int kAhead = 32;
template <TensorType T, int NV>
inline void prefetch_row(const uint8_t* p) {
  constexpr int n = row_bytes_of<T, NV>();
  for (int o = 0; o < n; o += 64) _mm_prefetch(reinterpret_cast<const char*>(p + o), _MM_HINT_T0);
  if (n % 64 != 0) _mm_prefetch(reinterpret_cast<const char*>(p + n - 1), _MM_HINT_T0);
}

// The 8 horizontal sums of a[0..7], in order.
inline __m256 reduce8(const __m512 (&a)[8]) {
  // Per 128-bit lane, pairs then quads of vectors: lane l of s0123 holds
  // lane l's partial sums of a0..a3.
  const __m512 s01 = _mm512_add_ps(_mm512_unpacklo_ps(a[0], a[1]), _mm512_unpackhi_ps(a[0], a[1]));
  const __m512 s23 = _mm512_add_ps(_mm512_unpacklo_ps(a[2], a[3]), _mm512_unpackhi_ps(a[2], a[3]));
  const __m512 s45 = _mm512_add_ps(_mm512_unpacklo_ps(a[4], a[5]), _mm512_unpackhi_ps(a[4], a[5]));
  const __m512 s67 = _mm512_add_ps(_mm512_unpacklo_ps(a[6], a[7]), _mm512_unpackhi_ps(a[6], a[7]));
  const __m512 s0123 = _mm512_add_ps(_mm512_shuffle_ps(s01, s23, _MM_SHUFFLE(1, 0, 1, 0)),
                                     _mm512_shuffle_ps(s01, s23, _MM_SHUFFLE(3, 2, 3, 2)));
  const __m512 s4567 = _mm512_add_ps(_mm512_shuffle_ps(s45, s67, _MM_SHUFFLE(1, 0, 1, 0)),
                                     _mm512_shuffle_ps(s45, s67, _MM_SHUFFLE(3, 2, 3, 2)));
  // Then across the four lanes.
  const __m512 t = _mm512_add_ps(_mm512_shuffle_f32x4(s0123, s4567, _MM_SHUFFLE(1, 0, 1, 0)),
                                 _mm512_shuffle_f32x4(s0123, s4567, _MM_SHUFFLE(3, 2, 3, 2)));
  const __m512 u = _mm512_add_ps(_mm512_shuffle_f32x4(t, t, _MM_SHUFFLE(2, 0, 2, 0)),
                                 _mm512_shuffle_f32x4(t, t, _MM_SHUFFLE(3, 1, 3, 1)));
  return _mm512_castps512_ps256(u);
}

// Lane l of v combined (max or add) with the lanes l + G, l + 2G, ... (mod
// 16), so that every lane holds the total of its head (lane l = head l % G;
// G divides 16).
template <bool kMax>
inline __m512 fold_heads(__m512 v, int G) {
  for (int s = G; s < 16; s *= 2) {
    const __m512i idx = _mm512_and_si512(
        _mm512_add_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi32(s)),
        _mm512_set1_epi32(15));
    const __m512 r = _mm512_permutexvar_ps(idx, v);
    v = kMax ? _mm512_max_ps(v, r) : _mm512_add_ps(v, r);
  }
  return v;
}

// Softmax over positions of the position-major scores[p * G + h] when G
// divides 16: the n_pos * G scores are walked as one flat array of full
// vectors (lane l = head l % G), so no two accesses overlap. (One masked
// vector per position would read each position right after the previous
// one's store to the same 64 bytes, which stalls on store forwarding.)
// Leaves exp(s - max) in scores and 1 / sum per head in inv[0..G).
inline void softmax_flat(float* scores, int n_pos, int G, float* inv) {
  const int64_t n = static_cast<int64_t>(n_pos) * G;
  const int64_t full = n / 16 * 16;
  const __mmask16 tail = lane_mask(static_cast<int>(n - full));
  const __m512 lowest = _mm512_set1_ps(-INFINITY);
  __m512 mx0 = lowest, mx1 = lowest;
  int64_t i = 0;
  for (; i + 32 <= full; i += 32) {
    mx0 = _mm512_max_ps(mx0, _mm512_loadu_ps(scores + i));
    mx1 = _mm512_max_ps(mx1, _mm512_loadu_ps(scores + i + 16));
  }
  if (i < full) mx0 = _mm512_max_ps(mx0, _mm512_loadu_ps(scores + i));
  if (tail) mx1 = _mm512_max_ps(mx1, _mm512_mask_loadu_ps(lowest, tail, scores + full));
  const __m512 mx = fold_heads<true>(_mm512_max_ps(mx0, mx1), G);
  __m512 sum = _mm512_setzero_ps();
  for (i = 0; i < full; i += 16) {
    const __m512 e = exp512(_mm512_sub_ps(_mm512_loadu_ps(scores + i), mx));
    _mm512_storeu_ps(scores + i, e);
    sum = _mm512_add_ps(sum, e);
  }
  if (tail) {
    const __m512 e = _mm512_maskz_mov_ps(tail, exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, scores + full), mx)));
    _mm512_mask_storeu_ps(scores + full, tail, e);
    sum = _mm512_add_ps(sum, e);
  }
  _mm512_store_ps(inv, _mm512_div_ps(_mm512_set1_ps(1.0f), fold_heads<false>(sum, G)));
}

// The scores of query heads [h0, h0 + NH) (NH <= 8) against key rows
// [0, n_pos), to out[p * S + j], prefetching the key and value rows kAhead
// on when asked (v_bytes: one value row). A function of its own, with
// restrict parameters (GCC honours restrict reliably on parameters only)
// and a constant head count:
// then the compiler keeps most of the queries in registers across the loop
// and runs it without branches. Written inline over AttendArgs, the queries
// were reloaded after every store to the scores (which might have aliased
// them) and a run-time head count kept its branches, which measured
// markedly slower.
template <TensorType KT, int NV, int NH, bool kPrefetch, bool kMasked>
__attribute__((noinline)) void score_heads(const float* __restrict q, const uint8_t* k, size_t k_stride,
                                           const uint8_t* v, size_t v_stride, int v_bytes, int n_pos, size_t S,
                                           float scale_f, float* __restrict out) {
  constexpr int hd = 16 * NV;
  const __m256 scale = _mm256_set1_ps(scale_f);
  for (int p = 0; p < n_pos; ++p) {
    if constexpr (kPrefetch) {
      prefetch_row<KT, NV>(k + static_cast<size_t>(p + kAhead) * k_stride);
      const char* vr = reinterpret_cast<const char*>(v + static_cast<size_t>(p + kAhead) * v_stride);
      for (int o = 0; o < v_bytes; o += 64) _mm_prefetch(vr + o, _MM_HINT_T0);
    }
    __m512 kr[NV];
    load_row<KT, NV>(k + static_cast<size_t>(p) * k_stride, kr);
    __m512 acc[8];
    for (int j = 0; j < 8; ++j) acc[j] = _mm512_setzero_ps();
    for (int i = 0; i < NV; ++i)
      for (int j = 0; j < NH; ++j) acc[j] = _mm512_fmadd_ps(_mm512_loadu_ps(q + j * hd + 16 * i), kr[i], acc[j]);
    const __m256 s = _mm256_mul_ps(reduce8(acc), scale);
    if constexpr (kMasked) {
      _mm256_mask_storeu_ps(out + static_cast<size_t>(p) * S, static_cast<__mmask8>((1u << NH) - 1), s);
    } else {
      // All 8 lanes: past NH they are zeros, the padding of this position's
      // scores and then the start of the next position's, which its own
      // store overwrites (the scratch has 8 floats of slack for the last).
      _mm256_storeu_ps(out + static_cast<size_t>(p) * S, s);
    }
  }
}

template <TensorType KT, TensorType VT, int NV, int NH>
void score_chunk(const AttendArgs& a, int h0, int S) {
  const bool pf = h0 == 0;  // the first pass over the keys prefetches for all
  // Masked only where the next lanes hold scores already made: the last,
  // partial chunk of more than 16 heads (S == G).
  const bool masked = NH < 8 && S > 16;
  auto run = pf ? (masked ? score_heads<KT, NV, NH, true, true> : score_heads<KT, NV, NH, true, false>)
                : (masked ? score_heads<KT, NV, NH, false, true> : score_heads<KT, NV, NH, false, false>);
  run(a.q + h0 * 16 * NV, a.k, a.k_stride, a.v, a.v_stride, row_bytes_of<VT, NV>(), a.n_pos,
      static_cast<size_t>(S), a.scale, a.scores + h0);
}

// scores[p * S + h] for every position and head (zeros in the padding up to
// the stride S), 8 heads at a time.
template <TensorType KT, TensorType VT, int NV>
void scores(const AttendArgs& a, int S) {
  for (int h0 = 0; h0 < a.group; h0 += 8) {
    switch (a.group - h0 < 8 ? a.group - h0 : 8) {
      case 1: score_chunk<KT, VT, NV, 1>(a, h0, S); break;
      case 2: score_chunk<KT, VT, NV, 2>(a, h0, S); break;
      case 3: score_chunk<KT, VT, NV, 3>(a, h0, S); break;
      case 4: score_chunk<KT, VT, NV, 4>(a, h0, S); break;
      case 5: score_chunk<KT, VT, NV, 5>(a, h0, S); break;
      case 6: score_chunk<KT, VT, NV, 6>(a, h0, S); break;
      case 7: score_chunk<KT, VT, NV, 7>(a, h0, S); break;
      default: score_chunk<KT, VT, NV, 8>(a, h0, S); break;
    }
  }
}

template <TensorType KT, TensorType VT, int NV>
void attend_impl(const AttendArgs& a) {
  constexpr int hd = 16 * NV;
  const int G = a.group;
  // Scores position-major: scores[p * S + h], the stride S padded up to a
  // divisor of 16 (kernels/vec.h, attend_scores_stride) so that the softmax
  // walks them as whole vectors. Unpadded, groups that do not divide 16 read
  // each position's scores with masked loads right after the previous
  // position's store to the same 64 bytes, which stalls on store
  // forwarding.
  const int S = attend_scores_stride(G);
  for (int p = 0; p < kAhead && p < a.n_pos; ++p) {
    prefetch_row<KT, NV>(a.k + static_cast<size_t>(p) * a.k_stride);
    prefetch_row<VT, NV>(a.v + static_cast<size_t>(p) * a.v_stride);
  }
  scores<KT, VT, NV>(a, S);
  // Softmax per head; the 1/sum is applied to the outputs.
  alignas(64) float inv[16];
  if (16 % S == 0) {
    softmax_flat(a.scores, a.n_pos, S, inv);
  } else {  // more than 16 heads: S == G, one head at a time
    softmax_heads(a.scores, a.n_pos, G);
  }
  // Values, a few heads at a time so their accumulators fit in registers.
  constexpr int HB = NV >= 16 ? 1 : 16 / NV;
  // With more than one pass, the first converts each value row once and
  // keeps it as floats for the others (a Q8_0 row costs ~4x an F16 one).
  const bool stage = G > HB && VT != TensorType::F32 && a.v_rows != nullptr;
  for (int h0 = 0; h0 < G; h0 += HB) {
    const int nh = G - h0 < HB ? G - h0 : HB;
    __m512 acc[HB][NV];
    for (int j = 0; j < HB; ++j)
      for (int i = 0; i < NV; ++i) acc[j][i] = _mm512_setzero_ps();
    for (int p = 0; p < a.n_pos; ++p) {
      __m512 v[NV];
      float* staged = stage ? a.v_rows + static_cast<size_t>(p) * hd : nullptr;
      if (stage && h0 > 0) {
        for (int i = 0; i < NV; ++i) v[i] = _mm512_loadu_ps(staged + 16 * i);
      } else {
        load_row<VT, NV>(a.v + static_cast<size_t>(p) * a.v_stride, v);
        if (stage)
          for (int i = 0; i < NV; ++i) _mm512_storeu_ps(staged + 16 * i, v[i]);
      }
      const float* w = a.scores + static_cast<size_t>(p) * S + h0;
      for (int j = 0; j < HB; ++j) {
        if (j >= nh) break;
        const __m512 wj = _mm512_set1_ps(w[j]);
        for (int i = 0; i < NV; ++i) acc[j][i] = _mm512_fmadd_ps(wj, v[i], acc[j][i]);
      }
    }
    for (int j = 0; j < nh; ++j) {
      const __m512 r = _mm512_set1_ps(G <= 16 ? inv[h0 + j] : 1.0f);
      for (int i = 0; i < NV; ++i) _mm512_storeu_ps(a.out + (h0 + j) * hd + 16 * i, _mm512_mul_ps(acc[j][i], r));
    }
  }
}

template <TensorType KT, int NV>
bool with_v(const AttendArgs& a) {
  switch (a.v_type) {
    case TensorType::F16: attend_impl<KT, TensorType::F16, NV>(a); return true;
    case TensorType::F32: attend_impl<KT, TensorType::F32, NV>(a); return true;
    case TensorType::Q8_0: attend_impl<KT, TensorType::Q8_0, NV>(a); return true;
    default: return false;
  }
}

template <int NV>
bool with_k(const AttendArgs& a) {
  switch (a.k_type) {
    case TensorType::F16: return with_v<TensorType::F16, NV>(a);
    case TensorType::F32: return with_v<TensorType::F32, NV>(a);
    case TensorType::Q8_0: return with_v<TensorType::Q8_0, NV>(a);
    default: return false;
  }
}

}  // namespace

bool attend(const AttendArgs& a) {
  if (a.n_pos <= 0) return false;
  switch (a.head_dim) {
    case 64: return with_k<4>(a);
    case 128: return with_k<8>(a);
    default: return false;
  }
}

}  // namespace brisk::kernels::avx512
