// SPDX-License-Identifier: MIT
// Attention's vector kernels (kernels/vec.h), written once over an ISA's
// vector traits V (avx2/simd_traits.h, avx512/simd_traits.h): they differ
// between ISAs only in the vector width. Each ISA's vec file instantiates
// them with its traits, so each copy is compiled with that folder's flags;
// they sit in an anonymous namespace (no external linkage: see
// avx512/common.h on the ODR caution). Include only from the ISA folders.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/tensor_type.h"
#include "kernels/prefetch.h"
#include "kernels/vec.h"
#include "quant/blocks.h"
#include "quant/quant.h"

namespace brisk::kernels::simd {
namespace {

// Two accumulators, so consecutive FMAs do not wait on each other.
template <class V>
float dot(const float* a, const float* b, int n) {
  constexpr int W = V::kLanes;
  typename V::F acc0 = V::zero(), acc1 = V::zero();
  int i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    acc0 = V::fmadd(V::load(a + i), V::load(b + i), acc0);
    acc1 = V::fmadd(V::load(a + i + W), V::load(b + i + W), acc1);
  }
  for (; i + W <= n; i += W) acc0 = V::fmadd(V::load(a + i), V::load(b + i), acc0);
  float s = V::hsum(V::add(acc0, acc1));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

// ops::rmsnorm bit for bit: the same eight double partial sums (partial j
// takes x[i] for i = j mod 8, in order), combined in the same order, and
// the same float products x * scale * w.
template <class V>
void rmsnorm(float* out, const float* x, const float* w, int64_t n, float eps) {
  constexpr int W = V::kLanes;
  typename V::D8 acc = V::zero_d8();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) acc = V::add_squares8(acc, x + i);
  double part[8];
  V::store_d8(part, acc);
  for (; i < n; ++i) part[i % 8] += static_cast<double>(x[i]) * x[i];
  const double ss = ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
  const float scale = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
  const typename V::F vs = V::set1(scale);
  int64_t k = 0;
  for (; k + W <= n; k += W) V::store(out + k, V::mul(V::mul(V::load(x + k), vs), V::load(w + k)));
  for (; k < n; ++k) out[k] = x[k] * scale * w[k];
}

template <class V>
void axpy(float* y, float a, const float* x, int n) {
  constexpr int W = V::kLanes;
  const typename V::F va = V::set1(a);
  int i = 0;
  for (; i + W <= n; i += W) V::store(y + i, V::fmadd(va, V::load(x + i), V::load(y + i)));
  for (; i < n; ++i) y[i] += a * x[i];
}

template <class V>
void to_f32(TensorType type, const void* src, float* dst, int n) {
  constexpr int W = V::kLanes;
  switch (type) {
    case TensorType::F32: {
      const float* f = static_cast<const float*>(src);
      for (int i = 0; i < n; ++i) dst[i] = f[i];
      return;
    }
    case TensorType::F16: {
      const uint16_t* h = static_cast<const uint16_t*>(src);
      int i = 0;
      for (; i + W <= n; i += W) V::store(dst + i, V::load_f16(h + i));
      for (; i < n; ++i) dst[i] = V::h2f(h[i]);
      return;
    }
    case TensorType::Q8_0: {
      const quant::BlockQ8_0* b = static_cast<const quant::BlockQ8_0*>(src);
      for (int blk = 0; blk < n / 32; ++blk) {
        const typename V::F d = V::set1(V::h2f(b[blk].d));
        for (int j = 0; j < 32; j += W) V::store(dst + blk * 32 + j, V::mul(d, V::load_i8(b[blk].qs + j)));
      }
      return;
    }
    default:
      quant::dequantize_row(type, src, dst, n);
  }
}

// F16 with F16C (round to nearest even, as the reference's bit-exact
// conversion); other types by the reference.
template <class V>
void from_f32(TensorType type, const float* src, void* dst, int n) {
  constexpr int W = V::kLanes;
  if (type != TensorType::F16) {
    quant::quantize_row(type, src, dst, n);
    return;
  }
  uint16_t* h = static_cast<uint16_t*>(dst);
  int i = 0;
  for (; i + W <= n; i += W) V::store_f16(h + i, V::load(src + i));
  for (; i < n; ++i) h[i] = V::f2h(src[i]);
}

// The bytes as N equal parts read side by side, U vector loads of each in
// turn, into four independent chains of adds (loads alone in the loop, and
// with Touch each part's pages touched ahead); the tail goes to the
// reference.
template <class V, int N, int U, bool Touch>
uint64_t read_streams(const uint8_t* b, size_t bytes) {
  constexpr size_t VB = sizeof(typename V::I);
  typename V::I s[4] = {V::zero_i(), V::zero_i(), V::zero_i(), V::zero_i()};
  const size_t part = bytes / (N * VB * U) * (VB * U);
  for (size_t i = 0; i < part; i += VB * U) {
    if constexpr (Touch)
      for (int n = 0; n < N; ++n) touch_pages_ahead(b + n * part + i, VB * U);
    for (int u = 0; u < U; ++u)
      for (int n = 0; n < N; ++n)
        s[(u * N + n) % 4] = V::add_u64(s[(u * N + n) % 4], V::load_i(b + n * part + i + VB * u));
  }
  const uint64_t sum = V::hsum_u64(V::add_u64(V::add_u64(s[0], s[1]), V::add_u64(s[2], s[3])));
  return sum + ref_vec_kernels()->read_sum(b + N * part, bytes - N * part, 1, false);
}

// Two streams: the two halves side by side, which can read faster than one.
// Four streams, two vectors of each in turn: faster than two at some moments
// and slower at others, so the bandwidth probe takes the better of the two:
// a ceiling must be the best read, not the simplest. For the same reason it
// also reads two streams with their pages touched ahead, the trick of the
// decode kernels (kernels/prefetch.h), and one stream with touched pages,
// the form of the one-column (decode) kernels, which at times reads faster
// than any of the others.
template <class V>
uint64_t read_sum(const void* p, size_t bytes, int streams, bool touch_pages) {
  const auto* b = static_cast<const uint8_t*>(p);
  if (streams == 1) return touch_pages ? read_streams<V, 1, 8, true>(b, bytes) : read_streams<V, 1, 8, false>(b, bytes);
  if (touch_pages) return streams == 4 ? read_streams<V, 4, 2, true>(b, bytes) : read_streams<V, 2, 4, true>(b, bytes);
  return streams == 4 ? read_streams<V, 4, 2, false>(b, bytes) : read_streams<V, 2, 4, false>(b, bytes);
}

// Lane sums in float over blocks of 512 values (the numerators are at most
// 1), block totals in double, so a vocabulary of 10^5 sums as exactly as the
// scalar loop does.
template <class V>
double exp_sum(float* out, const float* x, int64_t n, float shift, float scale) {
  constexpr int W = V::kLanes;
  using F = typename V::F;
  const F vs = V::set1(shift), vk = V::set1(scale), floor = V::set1(kExpFloor);
  double sum = 0;
  int64_t i = 0;
  while (i + 2 * W <= n) {
    F acc0 = V::zero(), acc1 = V::zero();
    for (const int64_t end = n < i + 512 ? n : i + 512; i + 2 * W <= end; i += 2 * W) {
      const F a0 = V::mul(V::sub(V::load(x + i), vs), vk), a1 = V::mul(V::sub(V::load(x + i + W), vs), vk);
      const F e0 = V::zero_below(V::exp_nonpos(a0), a0, floor), e1 = V::zero_below(V::exp_nonpos(a1), a1, floor);
      V::store(out + i, e0);
      V::store(out + i + W, e1);
      acc0 = V::add(acc0, e0);
      acc1 = V::add(acc1, e1);
    }
    sum += V::hsum(V::add(acc0, acc1));
  }
  if (i < n) sum += ref_vec_kernels()->exp_sum(out + i, x + i, n - i, shift, scale);
  return sum;
}

}  // namespace
}  // namespace brisk::kernels::simd
