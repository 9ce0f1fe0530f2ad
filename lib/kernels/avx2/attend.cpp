// SPDX-License-Identifier: MIT
// Fused AVX2 attention for one KV head and the query heads that share it
// (kernels/vec.h, AttendArgs): the AVX-512 version's plan (avx512/attend.cpp)
// in 8-lane vectors, for machines without AVX-512. The reference it replaces
// converts every cache row through memory, takes one horizontal sum per head
// and position and a scalar softmax: 7x the AVX-512 time. This runs in 2.3-
// 2.9x less time than the reference (BRISK_ISA=avx2 brisk_kernel_bench
// --attend: one thread, 4 KV heads, 600 cached positions in L2: groups of
// 8, head_dim 64: 237 -> 83 us; 7: 212 -> 79; head_dim 128, 4: 205 -> 87;
// 2000 positions, 8: 809 -> 287).
//
//  - scores: per position the key row is converted 8 values at a time and
//    each slice feeds the dot products of up to 8 heads; one reduction tree
//    turns the 8 heads' vectors into 8 sums, stored as one vector;
//  - softmax: the scores (position-major, stride padded to a divisor of 16)
//    walked as a flat array of whole vectors;
//  - values: the rows converted once into the v_rows scratch, then two heads
//    at a time accumulate 4 slices (32 values) of their outputs in registers.
// Handles head_dim 32, 64, 128 with F32, F16 or Q8_0 cache rows.
#include <math.h>

#include "kernels/avx2/common.h"
#include "kernels/vec.h"

namespace brisk::kernels::avx2 {

namespace {

// Values 8s..8s+7 of a cache row, as floats.
template <TensorType T>
inline __m256 load_slice(const uint8_t* row, int s) {
  if constexpr (T == TensorType::F32) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + 8 * s);
  } else if constexpr (T == TensorType::F16) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 16 * s)));
  } else {  // Q8_0: 34-byte blocks of 32, four slices each
    const uint8_t* b = row + 34 * (s / 4);
    const __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + 2 + 8 * (s % 4))));
    return _mm256_mul_ps(_mm256_set1_ps(h2f(load_u16(b))), _mm256_cvtepi32_ps(q));
  }
}

template <TensorType T>
constexpr int row_bytes_of(int hd) {
  return T == TensorType::F32 ? 4 * hd : T == TensorType::F16 ? 2 * hd : 34 * (hd / 32);
}

// As in avx512/attend.cpp: the first kAhead key and value rows are requested
// up front, then the rows kAhead positions on while the scores walk the keys.
constexpr int kAhead = 32;
inline void prefetch_span(const uint8_t* p, int bytes) {
  for (int o = 0; o < bytes; o += 64) _mm_prefetch(reinterpret_cast<const char*>(p + o), _MM_HINT_T0);
  _mm_prefetch(reinterpret_cast<const char*>(p + bytes - 1), _MM_HINT_T0);
}

// The 8 horizontal sums of a[0..7], in order.
inline __m256 reduce8(const __m256 (&a)[8]) {
  const __m256 t0 = _mm256_hadd_ps(a[0], a[1]), t1 = _mm256_hadd_ps(a[2], a[3]);
  const __m256 t2 = _mm256_hadd_ps(a[4], a[5]), t3 = _mm256_hadd_ps(a[6], a[7]);
  const __m256 u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);
  // u0 lane-half h holds a0..a3's sums over half h; u1 those of a4..a7.
  return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
}

// exp(x) for x <= 0 (softmax arguments), as avx512's exp512: 2^n * p(r).
inline __m256 exp256(__m256 x) {
  x = _mm256_max_ps(x, _mm256_set1_ps(-87.0f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  const __m256 y = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  // 2^n for n in [-126, 0]: the exponent field.
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

// Lanes 0..n-1 set (n <= 8), as a maskload/maskstore mask.
inline __m256i lanes(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// Lane l combined (max or add) with lanes l + S, l + 2S, ... (mod 8): every
// lane then holds its head's total (lane l = head l % S; S divides 8).
template <bool kMax>
inline __m256 fold_heads(__m256 v, int S) {
  for (int s = S; s < 8; s *= 2) {
    const __m256i idx = _mm256_and_si256(
        _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(s)), _mm256_set1_epi32(7));
    const __m256 r = _mm256_permutevar8x32_ps(v, idx);
    v = kMax ? _mm256_max_ps(v, r) : _mm256_add_ps(v, r);
  }
  return v;
}

// The scores of query heads [h0, h0 + NH) against key rows [0, n_pos), to
// out[p * S + j] (restrict parameters and a constant head count, as in
// avx512/attend.cpp). Stores all 8 lanes (zeros past NH: padding, or the
// next position's, rewritten by its own store) unless kMasked.
template <TensorType KT, int NH, bool kPrefetch, bool kMasked>
__attribute__((noinline)) void score_heads(const float* __restrict q, int hd, const uint8_t* k, size_t k_stride,
                                           const uint8_t* v, size_t v_stride, int v_bytes, int n_pos, size_t S,
                                           float scale_f, float* __restrict out) {
  const __m256 scale = _mm256_set1_ps(scale_f);
  const int k_bytes = row_bytes_of<KT>(hd);
  const __m256i mask = lanes(NH);
  for (int p = 0; p < n_pos; ++p) {
    if constexpr (kPrefetch) {
      prefetch_span(k + static_cast<size_t>(p + kAhead) * k_stride, k_bytes);
      prefetch_span(v + static_cast<size_t>(p + kAhead) * v_stride, v_bytes);
    }
    const uint8_t* row = k + static_cast<size_t>(p) * k_stride;
    __m256 acc[8];
    for (int j = 0; j < 8; ++j) acc[j] = _mm256_setzero_ps();
    for (int s = 0; s < hd / 8; ++s) {
      const __m256 x = load_slice<KT>(row, s);
      for (int j = 0; j < NH; ++j) acc[j] = _mm256_fmadd_ps(_mm256_loadu_ps(q + j * hd + 8 * s), x, acc[j]);
    }
    const __m256 r = _mm256_mul_ps(reduce8(acc), scale);
    if constexpr (kMasked) {
      _mm256_maskstore_ps(out + static_cast<size_t>(p) * S, mask, r);
    } else {
      _mm256_storeu_ps(out + static_cast<size_t>(p) * S, r);
    }
  }
}

template <TensorType KT, TensorType VT, int NH>
void score_chunk(const AttendArgs& a, int h0, int S) {
  const bool pf = h0 == 0;            // the first pass over the keys prefetches for all
  const bool masked = NH < 8 && S > 16;  // the last, partial chunk of more than 16 heads
  auto run = pf ? (masked ? score_heads<KT, NH, true, true> : score_heads<KT, NH, true, false>)
                : (masked ? score_heads<KT, NH, false, true> : score_heads<KT, NH, false, false>);
  run(a.q + h0 * a.head_dim, a.head_dim, a.k, a.k_stride, a.v, a.v_stride, row_bytes_of<VT>(a.head_dim), a.n_pos,
      static_cast<size_t>(S), a.scale, a.scores + h0);
}

template <TensorType KT, TensorType VT>
void scores(const AttendArgs& a, int S) {
  for (int h0 = 0; h0 < a.group; h0 += 8) {
    switch (a.group - h0 < 8 ? a.group - h0 : 8) {
      case 1: score_chunk<KT, VT, 1>(a, h0, S); break;
      case 2: score_chunk<KT, VT, 2>(a, h0, S); break;
      case 3: score_chunk<KT, VT, 3>(a, h0, S); break;
      case 4: score_chunk<KT, VT, 4>(a, h0, S); break;
      case 5: score_chunk<KT, VT, 5>(a, h0, S); break;
      case 6: score_chunk<KT, VT, 6>(a, h0, S); break;
      case 7: score_chunk<KT, VT, 7>(a, h0, S); break;
      default: score_chunk<KT, VT, 8>(a, h0, S); break;
    }
  }
}

// Softmax over positions of scores[p * S + h] for S dividing 16: the
// n_pos * S scores walked as whole vectors, even and odd vectors apart (with
// S == 16 they hold heads 0-7 and 8-15; with S <= 8 both hold lane l = head
// l % S). Leaves exp(s - max) in the scores and 1 / sum per head in inv[0..S).
void softmax_flat(float* scores, int n_pos, int S, float* inv) {
  const int64_t n = static_cast<int64_t>(n_pos) * S;
  const int64_t full = n / 8 * 8;
  const int tail = static_cast<int>(n - full);
  const __m256i tmask = lanes(tail);
  const __m256 lowest = _mm256_set1_ps(-INFINITY);
  __m256 mx[2] = {lowest, lowest};
  for (int64_t i = 0; i < full; i += 8) mx[(i / 8) & 1] = _mm256_max_ps(mx[(i / 8) & 1], _mm256_loadu_ps(scores + i));
  if (tail)
    mx[(full / 8) & 1] =
        _mm256_max_ps(mx[(full / 8) & 1], _mm256_blendv_ps(lowest, _mm256_maskload_ps(scores + full, tmask),
                                                           _mm256_castsi256_ps(tmask)));
  if (S <= 8) mx[0] = mx[1] = fold_heads<true>(_mm256_max_ps(mx[0], mx[1]), S);
  __m256 sum[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int64_t i = 0; i < full; i += 8) {
    const int h = (i / 8) & 1;
    const __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(scores + i), mx[h]));
    _mm256_storeu_ps(scores + i, e);
    sum[h] = _mm256_add_ps(sum[h], e);
  }
  if (tail) {
    const int h = (full / 8) & 1;
    const __m256 e = _mm256_and_ps(exp256(_mm256_sub_ps(_mm256_maskload_ps(scores + full, tmask), mx[h])),
                                   _mm256_castsi256_ps(tmask));
    _mm256_maskstore_ps(scores + full, tmask, e);
    sum[h] = _mm256_add_ps(sum[h], e);
  }
  const __m256 one = _mm256_set1_ps(1.0f);
  if (S <= 8) {
    _mm256_storeu_ps(inv, _mm256_div_ps(one, fold_heads<false>(_mm256_add_ps(sum[0], sum[1]), S)));
  } else {
    _mm256_storeu_ps(inv, _mm256_div_ps(one, sum[0]));
    _mm256_storeu_ps(inv + 8, _mm256_div_ps(one, sum[1]));
  }
}

// out[j] = r[j] * sum_p w[p * S + j] V[p] for NH heads and the value slices
// [s0, s0 + 4) of their outputs: each slice loaded feeds NH accumulators in
// registers (two heads: half a load per FMA, where one head's 8 slices took
// one each and ran at half the speed).
template <TensorType VT, int NH>
__attribute__((noinline)) void value_block(const uint8_t* v, size_t v_stride, const float* __restrict w, size_t S,
                                           int n_pos, int s0, int hd, const float* __restrict r, int r_step,
                                           float* __restrict out) {
  __m256 acc[NH][4];
  for (int j = 0; j < NH; ++j)
    for (int i = 0; i < 4; ++i) acc[j][i] = _mm256_setzero_ps();
  for (int p = 0; p < n_pos; ++p) {
    const uint8_t* row = v + static_cast<size_t>(p) * v_stride;
    __m256 x[4];
    for (int i = 0; i < 4; ++i) x[i] = load_slice<VT>(row, s0 + i);
    for (int j = 0; j < NH; ++j) {
      const __m256 wj = _mm256_set1_ps(w[static_cast<size_t>(p) * S + j]);
      for (int i = 0; i < 4; ++i) acc[j][i] = _mm256_fmadd_ps(wj, x[i], acc[j][i]);
    }
  }
  for (int j = 0; j < NH; ++j) {
    const __m256 rj = _mm256_set1_ps(r[j * r_step]);
    for (int i = 0; i < 4; ++i) _mm256_storeu_ps(out + j * hd + 8 * (s0 + i), _mm256_mul_ps(acc[j][i], rj));
  }
}

// Every head's output, two heads and 32 values at a time; head h's scale is
// r[h * r_step].
template <TensorType VT>
void values(const uint8_t* v, size_t v_stride, const float* w, size_t S, int n_pos, int G, int hd, const float* r,
            int r_step, float* out) {
  for (int h = 0; h < G; h += 2) {
    for (int s0 = 0; s0 < hd / 8; s0 += 4) {
      if (G - h >= 2) {
        value_block<VT, 2>(v, v_stride, w + h, S, n_pos, s0, hd, r + h * r_step, r_step, out + h * hd);
      } else {
        value_block<VT, 1>(v, v_stride, w + h, S, n_pos, s0, hd, r + h * r_step, r_step, out + h * hd);
      }
    }
  }
}

template <TensorType KT, TensorType VT>
void attend_impl(const AttendArgs& a) {
  const int G = a.group, hd = a.head_dim;
  const int S = attend_scores_stride(G);
  for (int p = 0; p < kAhead && p < a.n_pos; ++p) {
    prefetch_span(a.k + static_cast<size_t>(p) * a.k_stride, row_bytes_of<KT>(hd));
    prefetch_span(a.v + static_cast<size_t>(p) * a.v_stride, row_bytes_of<VT>(hd));
  }
  scores<KT, VT>(a, S);
  alignas(32) float inv[16];
  if (16 % S == 0) {
    softmax_flat(a.scores, a.n_pos, S, inv);
  } else {  // more than 16 heads: S == G, one head at a time
    softmax_heads(a.scores, a.n_pos, G);
  }
  // Values: with several heads, each row is converted to floats once (into
  // v_rows) and every head's passes read those.
  const uint8_t* v = a.v;
  size_t v_stride = a.v_stride;
  const bool stage = VT != TensorType::F32 && G > 1 && a.v_rows != nullptr;
  if (stage) {
    for (int p = 0; p < a.n_pos; ++p) {
      const uint8_t* row = a.v + static_cast<size_t>(p) * a.v_stride;
      float* dst = a.v_rows + static_cast<size_t>(p) * hd;
      for (int s = 0; s < hd / 8; ++s) _mm256_storeu_ps(dst + 8 * s, load_slice<VT>(row, s));
    }
    v = reinterpret_cast<const uint8_t*>(a.v_rows);
    v_stride = static_cast<size_t>(hd) * sizeof(float);
  }
  // 1 / sum per head, or 1 for all where the softmax normalised already.
  const float one = 1.0f;
  const float* r = G <= 16 ? inv : &one;
  const int r_step = G <= 16 ? 1 : 0;
  if (stage) {
    values<TensorType::F32>(v, v_stride, a.scores, static_cast<size_t>(S), a.n_pos, G, hd, r, r_step, a.out);
  } else {
    values<VT>(v, v_stride, a.scores, static_cast<size_t>(S), a.n_pos, G, hd, r, r_step, a.out);
  }
}

template <TensorType KT>
bool with_v(const AttendArgs& a) {
  switch (a.v_type) {
    case TensorType::F16: attend_impl<KT, TensorType::F16>(a); return true;
    case TensorType::F32: attend_impl<KT, TensorType::F32>(a); return true;
    case TensorType::Q8_0: attend_impl<KT, TensorType::Q8_0>(a); return true;
    default: return false;
  }
}

}  // namespace

bool attend(const AttendArgs& a) {
  if (a.n_pos <= 0) return false;
  if (a.head_dim != 32 && a.head_dim != 64 && a.head_dim != 128) return false;
  switch (a.k_type) {
    case TensorType::F16: return with_v<TensorType::F16>(a);
    case TensorType::F32: return with_v<TensorType::F32>(a);
    case TensorType::Q8_0: return with_v<TensorType::Q8_0>(a);
    default: return false;
  }
}

}  // namespace brisk::kernels::avx2
