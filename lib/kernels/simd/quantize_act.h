// SPDX-License-Identifier: MIT
// The activation encoders: a matmul's float input in the format its kernel
// reads (Q8_0, Q8_0 with sums, Q8_1, Q8_K), written once over an ISA's
// vector traits V (avx2/simd_traits.h, avx512/simd_traits.h). Each is
// byte-identical to its reference in ref/, which follows ggml's reference
// quantizers (tests/test_matmul_simd.cpp holds them to it). Each ISA's
// quantize_act.cpp instantiates them with its traits; anonymous namespace
// for the ODR reason of avx512/common.h. Include only from the ISA folders.
#pragma once
#include <cstdint>
#include <cstring>

#include "kernels/packed.h"
#include "quant/blocks.h"

namespace brisk::kernels::simd {
namespace {

// The 32 floats at x as ggml's Q8_0 / Q8_1 reference: d = amax / 127,
// q = roundf(x / d), written to qs in order; *sum (if asked) is their sum.
// Returns d.
template <class V>
float q8_block(const float* x, int8_t* qs, int* sum) {
  constexpr int W = V::kLanes, N = 32 / W;
  typename V::F v[N];
  typename V::F amax = V::zero();
  for (int i = 0; i < N; ++i) {
    v[i] = V::load(x + W * i);
    amax = V::max(amax, V::abs(v[i]));
  }
  const float d = V::hmax(amax) / 127;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  const typename V::F vid = V::set1(id);
  typename V::I q[N];
  for (int i = 0; i < N; ++i) q[i] = V::trunc_i32(V::round_away(V::mul(v[i], vid)));
  if (sum) {
    typename V::I s = q[0];
    for (int i = 1; i < N; ++i) s = V::add_i32(s, q[i]);
    *sum = V::hsum_i32(s);
  }
  V::store_i8_32(qs, q);
  return d;
}

template <class V>
void quantize_q8_0(const float* x, void* out, int64_t k) {
  auto* y = static_cast<quant::BlockQ8_0*>(out);
  for (int64_t b = 0; b < k / 32; ++b) y[b].d = V::f2h(q8_block<V>(x + b * 32, y[b].qs, nullptr));
}

template <class V>
void quantize_q8_1(const float* x, void* out, int64_t k) {
  auto* y = static_cast<quant::BlockQ8_1*>(out);
  for (int64_t b = 0; b < k / 32; ++b) {
    int sum;
    const float d = q8_block<V>(x + b * 32, y[b].qs, &sum);
    y[b].d = V::f2h(d);
    // ggml rounds s from the unrounded d.
    y[b].s = V::f2h(static_cast<float>(sum) * d);
  }
}

// Q8_0 blocks, then each block's scale as a float and its sum (packed.h,
// "Q8_0 with sums"), as the packed Q4_0 / Q8_0 kernels read them.
template <class V>
void quantize_q8_0_sums(const float* x, void* out, int64_t k) {
  auto* y = static_cast<quant::BlockQ8_0*>(out);
  const int64_t nb = k / 32;
  auto* d_out = reinterpret_cast<float*>(static_cast<uint8_t*>(out) + q8_0_sums_offset(k));
  int32_t* s_out = reinterpret_cast<int32_t*>(d_out + nb);
  for (int64_t b = 0; b < nb; ++b) {
    int sum;
    y[b].d = V::f2h(q8_block<V>(x + b * 32, y[b].qs, &sum));
    d_out[b] = V::h2f(y[b].d);
    s_out[b] = sum;
  }
}

// ggml's quantize_row_q8_K_ref: the scale from the first element of largest
// magnitude (iscale = -127 / that element, so it maps to -127), values
// rounded half to even (its nearest_int; the vector convert under the
// default MXCSR), clamped to 127, and the sums of each 16.
template <class V>
void quantize_q8_k(const float* x, void* out, int64_t k) {
  constexpr int W = V::kLanes, N = 32 / W;
  using quant::QK_K;
  auto* y = static_cast<quant::BlockQ8_K*>(out);
  for (int64_t b = 0; b < k / QK_K; ++b, x += QK_K) {
    typename V::F amaxv = V::zero();
    for (int i = 0; i < QK_K; i += W) amaxv = V::max(amaxv, V::abs(V::load(x + i)));
    const float amax = V::hmax(amaxv);
    if (amax == 0) {
      // ggml leaves bsums unwritten here; zero is what they would sum to.
      std::memset(&y[b], 0, sizeof(quant::BlockQ8_K));
      continue;
    }
    int first = 0;
    for (int i = 0; i < QK_K; i += W) {
      const uint32_t m = V::equal_bits(V::abs(V::load(x + i)), V::set1(amax));
      if (m) {
        first = i + __builtin_ctz(m);
        break;
      }
    }
    const float iscale = -127.f / x[first];
    const typename V::F vs = V::set1(iscale);
    for (int i = 0; i < QK_K; i += 32) {
      typename V::I q[N];
      for (int j = 0; j < N; ++j) q[j] = V::min_i32(V::round_i32(V::mul(V::load(x + i + W * j), vs)), 127);
      V::store_i8_32(y[b].qs + i, q);
      for (int h = 0; h < 2; ++h) {
        typename V::I s = q[h * N / 2];
        for (int j = 1; j < N / 2; ++j) s = V::add_i32(s, q[h * N / 2 + j]);
        y[b].bsums[i / 16 + h] = static_cast<int16_t>(V::hsum_i32(s));
      }
    }
    y[b].d = 1 / iscale;
  }
}

}  // namespace
}  // namespace brisk::kernels::simd
