// SPDX-License-Identifier: MIT
// The 32-weight block formats: Q4_0, Q4_1, Q8_0 (weights) and Q8_1
// (activations for Q4_1 dot products).
//
// Without importance every quantizer reproduces ggml's *_ref function bit for
// bit, which means keeping its exact float operations: the scale is computed
// from the unrounded d, elements are multiplied by 1/d (not divided by d),
// and the 4-bit paths round with "+ offset then truncate" while Q8 uses
// roundf (half away from zero). Don't "simplify" any of these.
#include <algorithm>
#include <cfloat>
#include <cmath>

#include "quant/quant_internal.h"

namespace brisk::quant::detail {

namespace {

// ---- ggml reference encoders, one block each ----

void q4_0_ref_block(const float* x, BlockQ4_0* y) {
  // The signed value of largest magnitude maps to -8, so the asymmetric range
  // [-8, 7] spends its extra level on the side that needs it.
  float amax = 0, vmax = 0;
  for (int j = 0; j < QK4_0; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      vmax = x[j];
    }
  }
  const float d = vmax / -8;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  y->d = f2h(d);
  for (int j = 0; j < QK4_0 / 2; ++j) {
    const int lo = std::min(15, static_cast<int>(x[j] * id + 8.5f));
    const int hi = std::min(15, static_cast<int>(x[j + QK4_0 / 2] * id + 8.5f));
    y->qs[j] = static_cast<uint8_t>(lo | (hi << 4));
  }
}

void q4_1_ref_block(const float* x, BlockQ4_1* y) {
  float vmin = FLT_MAX, vmax = -FLT_MAX;
  for (int j = 0; j < QK4_1; ++j) {
    vmin = std::min(vmin, x[j]);
    vmax = std::max(vmax, x[j]);
  }
  const float d = (vmax - vmin) / 15;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  y->d = f2h(d);
  y->m = f2h(vmin);
  for (int j = 0; j < QK4_1 / 2; ++j) {
    const int lo = std::min(15, static_cast<int>((x[j] - vmin) * id + 0.5f));
    const int hi = std::min(15, static_cast<int>((x[j + QK4_1 / 2] - vmin) * id + 0.5f));
    y->qs[j] = static_cast<uint8_t>(lo | (hi << 4));
  }
}

void q8_0_ref_block(const float* x, BlockQ8_0* y) {
  float amax = 0;
  for (int j = 0; j < QK8_0; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  y->d = f2h(d);
  for (int j = 0; j < QK8_0; ++j) y->qs[j] = static_cast<int8_t>(std::round(x[j] * id));
}

void q8_1_ref_block(const float* x, BlockQ8_1* y) {
  float amax = 0;
  for (int j = 0; j < QK8_1; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  y->d = f2h(d);
  int sum = 0;
  for (int j = 0; j < QK8_1; ++j) {
    y->qs[j] = static_cast<int8_t>(std::round(x[j] * id));
    sum += y->qs[j];
  }
  // s is rounded from the *unrounded* d, as ggml does.
  y->s = f2h(static_cast<float>(sum) * d);
}

// ---- decoders, one block each ----

void q4_0_decode(const BlockQ4_0& b, float* y) {
  const float d = h2f(b.d);
  for (int j = 0; j < QK4_0 / 2; ++j) {
    y[j] = static_cast<float>((b.qs[j] & 0x0F) - 8) * d;
    y[j + QK4_0 / 2] = static_cast<float>((b.qs[j] >> 4) - 8) * d;
  }
}

void q4_1_decode(const BlockQ4_1& b, float* y) {
  const float d = h2f(b.d), m = h2f(b.m);
  for (int j = 0; j < QK4_1 / 2; ++j) {
    y[j] = static_cast<float>(b.qs[j] & 0x0F) * d + m;
    y[j + QK4_1 / 2] = static_cast<float>(b.qs[j] >> 4) * d + m;
  }
}

void q8_0_decode(const BlockQ8_0& b, float* y) {
  const float d = h2f(b.d);
  for (int j = 0; j < QK8_0; ++j) y[j] = static_cast<float>(b.qs[j]) * d;
}

// ---- importance-weighted encoders ----
// Each builds a weighted candidate and keeps it only if its weighted error,
// measured on the decoded block, beats the reference encoding: importance
// can therefore never make a block worse than plain quantization.

void q4_0_weighted_block(const float* x, const float* w, BlockQ4_0* y) {
  q4_0_ref_block(x, y);
  float dec[QK4_0];
  q4_0_decode(*y, dec);
  const double ref_err = weighted_sq_error(x, dec, w, QK4_0);

  int L[QK4_0];
  const float d = fit_symmetric(x, w, QK4_0, -8, 7, true, L);
  BlockQ4_0 cand;
  cand.d = f2h(d);
  for (int j = 0; j < QK4_0 / 2; ++j)
    cand.qs[j] = static_cast<uint8_t>((L[j] + 8) | ((L[j + QK4_0 / 2] + 8) << 4));
  q4_0_decode(cand, dec);
  if (weighted_sq_error(x, dec, w, QK4_0) < ref_err) *y = cand;
}

void q4_1_weighted_block(const float* x, const float* w, BlockQ4_1* y) {
  q4_1_ref_block(x, y);
  float dec[QK4_1];
  q4_1_decode(*y, dec);
  const double ref_err = weighted_sq_error(x, dec, w, QK4_1);

  int L[QK4_1];
  float m = 0;
  const float d = fit_affine(x, w, QK4_1, 15, false, true, L, &m);
  BlockQ4_1 cand;
  cand.d = f2h(d);
  cand.m = f2h(m);
  for (int j = 0; j < QK4_1 / 2; ++j)
    cand.qs[j] = static_cast<uint8_t>(L[j] | (L[j + QK4_1 / 2] << 4));
  q4_1_decode(cand, dec);
  if (weighted_sq_error(x, dec, w, QK4_1) < ref_err) *y = cand;
}

void q8_0_weighted_block(const float* x, const float* w, BlockQ8_0* y) {
  q8_0_ref_block(x, y);
  float dec[QK8_0];
  q8_0_decode(*y, dec);
  const double ref_err = weighted_sq_error(x, dec, w, QK8_0);

  // -128 stays unused, as in ggml: SIMD dot products negate int8 values.
  int L[QK8_0];
  const float d = fit_symmetric(x, w, QK8_0, -127, 127, true, L);
  BlockQ8_0 cand;
  cand.d = f2h(d);
  for (int j = 0; j < QK8_0; ++j) cand.qs[j] = static_cast<int8_t>(L[j]);
  q8_0_decode(cand, dec);
  if (weighted_sq_error(x, dec, w, QK8_0) < ref_err) *y = cand;
}

}  // namespace

void quantize_q4_0(const float* x, BlockQ4_0* y, int64_t n, const float* imp) {
  for (int64_t i = 0; i < n / QK4_0; ++i) {
    if (imp) {
      q4_0_weighted_block(x + i * QK4_0, imp + i * QK4_0, y + i);
    } else {
      q4_0_ref_block(x + i * QK4_0, y + i);
    }
  }
}

void quantize_q4_1(const float* x, BlockQ4_1* y, int64_t n, const float* imp) {
  for (int64_t i = 0; i < n / QK4_1; ++i) {
    if (imp) {
      q4_1_weighted_block(x + i * QK4_1, imp + i * QK4_1, y + i);
    } else {
      q4_1_ref_block(x + i * QK4_1, y + i);
    }
  }
}

void quantize_q8_0(const float* x, BlockQ8_0* y, int64_t n, const float* imp) {
  for (int64_t i = 0; i < n / QK8_0; ++i) {
    if (imp) {
      q8_0_weighted_block(x + i * QK8_0, imp + i * QK8_0, y + i);
    } else {
      q8_0_ref_block(x + i * QK8_0, y + i);
    }
  }
}

void quantize_q8_1(const float* x, BlockQ8_1* y, int64_t n) {
  for (int64_t i = 0; i < n / QK8_1; ++i) q8_1_ref_block(x + i * QK8_1, y + i);
}

void dequantize_q4_0(const BlockQ4_0* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n / QK4_0; ++i) q4_0_decode(x[i], y + i * QK4_0);
}

void dequantize_q4_1(const BlockQ4_1* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n / QK4_1; ++i) q4_1_decode(x[i], y + i * QK4_1);
}

void dequantize_q8_0(const BlockQ8_0* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n / QK8_0; ++i) q8_0_decode(x[i], y + i * QK8_0);
}

void dequantize_q8_1(const BlockQ8_1* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n / QK8_1; ++i) {
    const float d = h2f(x[i].d);
    for (int j = 0; j < QK8_1; ++j) y[i * QK8_1 + j] = static_cast<float>(x[i].qs[j]) * d;
  }
}

}  // namespace brisk::quant::detail
