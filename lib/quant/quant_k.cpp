// SPDX-License-Identifier: MIT
// K-quants (256-weight super-blocks): the ggml reference encoders for Q4_K,
// Q5_K and Q6_K, the Q8_K activation encoder, and all four decoders. The
// importance-weighted encoders live in quant_k_weighted.cpp.
//
// Bit-exactness with llama-quantize hinges on replaying ggml's float
// arithmetic literally: the same accumulation order, `w*l*l` evaluated as
// (w*l)*l, int-to-float promotions at the same points, nearest_int rather
// than any libm rounding, and the quirks (the running `min` that feeds back
// into later candidate scales in the affine search; levels left over from the
// search in sub-blocks whose quantized scale is zero). Comments mark them.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/quant_internal.h"
#include "quant/quant_k_internal.h"

namespace brisk::quant::detail {

namespace {

constexpr float kGroupMaxEps = 1e-15f;  // ggml's GROUP_MAX_EPS: "all zero" below this

// ggml's make_qkx2_quants: affine fit x ~ scale*L + min (min <= 0), trying
// nstep+1 grid densities and solving weighted least squares for each.
float affine_fit_ref(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                     float* neg_min, float rmin, float rdelta, int nstep) {
  float min = x[0], max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *neg_min = -min;
    return 0.f;
  }
  float iscale = nmax / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = nearest_int(iscale * (x[i] - min));
    L[i] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    float diff = scale * L[i] + min - x[i];
    diff = diff * diff;
    best_error += weights[i] * diff;
  }
  uint8_t Laux[32];
  for (int is = 0; is <= nstep; ++is) {
    // Quirk: `min` here is the best fit so far, not the data minimum.
    iscale = (rmin + rdelta * is + nmax) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      int l = nearest_int(iscale * (x[i] - min));
      l = std::max(0, std::min(nmax, l));
      Laux[i] = static_cast<uint8_t>(l);
      const float w = weights[i];
      sum_l += w * l;
      sum_l2 += w * l * l;
      sum_xl += w * l * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * Laux[i] + this_min - x[i];
        diff = diff * diff;
        cur_error += weights[i] * diff;
      }
      if (cur_error < best_error) {
        std::memcpy(L, Laux, static_cast<size_t>(n));
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *neg_min = -min;
  return scale;
}

// ggml's make_qx_quants with rmse_type 1 and no weights (Q6_K reference):
// symmetric fit x ~ scale*(L - nmax), weighting each element by x^2.
float symmetric_fit_ref(int n, int nmax, const float* x, int8_t* L) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  float iscale = -nmax / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    int l = nearest_int(iscale * x[i]);
    l = std::max(-nmax, std::min(nmax - 1, l));
    L[i] = static_cast<int8_t>(l + nmax);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(nmax + 0.1f * is) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      int l = nearest_int(iscale * x[i]);
      l = std::max(-nmax, std::min(nmax - 1, l));
      const float w = x[i] * x[i];
      sumlx += w * x[i] * l;
      suml2 += w * l * l;
    }
    // Larger sumlx^2/suml2 means smaller weighted error at the optimal scale.
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) {
        const int l = nearest_int(iscale * x[i]);
        L[i] = static_cast<int8_t>(nmax + std::max(-nmax, std::min(nmax - 1, l)));
      }
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// Shared by the Q4_K and Q5_K reference encoders: sub-block fits, 6-bit
// scale/min quantization, then final levels for the quantized scales.
void q45_k_ref_scales(const float* x, int nmax, float rmin, float rdelta, int nstep,
                      uint16_t* d_out, uint16_t* dmin_out, uint8_t* scales, uint8_t* L) {
  float sub_scale[QK_K / 32], sub_min[QK_K / 32];
  float weights[32];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < QK_K / 32; ++j) {
    const float* xs = x + 32 * j;
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xs[l]);
    sub_scale[j] = affine_fit_ref(32, nmax, xs, weights, L + 32 * j, &sub_min[j], rmin, rdelta,
                                  nstep);
    if (sub_scale[j] > max_scale) max_scale = sub_scale[j];
    if (sub_min[j] > max_min) max_min = sub_min[j];
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  std::memset(scales, 0, K_SCALE_SIZE);
  for (int j = 0; j < QK_K / 32; ++j) {
    // Truncation to uint8_t before the clamp is ggml's; it only matters for
    // negative fits, which wrap to 255 and clamp to 63.
    uint8_t ls = static_cast<uint8_t>(nearest_int(inv_scale * sub_scale[j]));
    uint8_t lm = static_cast<uint8_t>(nearest_int(inv_min * sub_min[j]));
    ls = std::min<uint8_t>(63, ls);
    lm = std::min<uint8_t>(63, lm);
    set_scale_min_k4(j, scales, ls, lm);
  }
  *d_out = f2h(max_scale / 63.f);
  *dmin_out = f2h(max_min / 63.f);
  requantize_q45_k(x, nmax, *d_out, *dmin_out, scales, L);
}

}  // namespace

void requantize_q45_k(const float* x, int nmax, uint16_t d16, uint16_t dmin16,
                      const uint8_t* scales, uint8_t* L) {
  for (int j = 0; j < QK_K / 32; ++j) {
    uint8_t sc, m;
    get_scale_min_k4(j, scales, &sc, &m);
    const float d = h2f(d16) * sc;
    if (d == 0) continue;  // quirk: keeps the levels the fit produced
    const float dm = h2f(dmin16) * m;
    for (int ii = 0; ii < 32; ++ii) {
      const int l = nearest_int((x[32 * j + ii] + dm) / d);
      L[32 * j + ii] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    }
  }
}

void pack_q4_k(const uint8_t* L, BlockQ4_K* y) {
  uint8_t* q = y->qs;
  for (int j = 0; j < QK_K; j += 64) {
    for (int l = 0; l < 32; ++l) q[l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
    q += 32;
  }
}

void pack_q5_k(const uint8_t* L, BlockQ5_K* y) {
  uint8_t* qh = y->qh;
  uint8_t* ql = y->qs;
  std::memset(qh, 0, QK_K / 8);
  uint8_t m1 = 1, m2 = 2;
  for (int n = 0; n < QK_K; n += 64) {
    for (int j = 0; j < 32; ++j) {
      int l1 = L[n + j];
      if (l1 > 15) {
        l1 -= 16;
        qh[j] |= m1;
      }
      int l2 = L[n + j + 32];
      if (l2 > 15) {
        l2 -= 16;
        qh[j] |= m2;
      }
      ql[j] = static_cast<uint8_t>(l1 | (l2 << 4));
    }
    m1 <<= 2;
    m2 <<= 2;
    ql += 32;
  }
}

void pack_q6_k(const int8_t* L, BlockQ6_K* y) {
  uint8_t* ql = y->ql;
  uint8_t* qh = y->qh;
  for (int j = 0; j < QK_K; j += 128) {
    for (int l = 0; l < 32; ++l) {
      const uint8_t q1 = L[j + l + 0] & 0xF;
      const uint8_t q2 = L[j + l + 32] & 0xF;
      const uint8_t q3 = L[j + l + 64] & 0xF;
      const uint8_t q4 = L[j + l + 96] & 0xF;
      ql[l + 0] = static_cast<uint8_t>(q1 | (q3 << 4));
      ql[l + 32] = static_cast<uint8_t>(q2 | (q4 << 4));
      qh[l] = static_cast<uint8_t>((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) |
                                   ((L[j + l + 64] >> 4) << 4) | ((L[j + l + 96] >> 4) << 6));
    }
    ql += 64;
    qh += 32;
  }
}

void requantize_q6_k(const float* x, const BlockQ6_K& y, int8_t* L) {
  for (int j = 0; j < QK_K / 16; ++j) {
    const float d = h2f(y.d) * y.scales[j];
    if (d == 0) continue;  // quirk: keeps the levels the fit produced
    for (int ii = 0; ii < 16; ++ii) {
      const int l = nearest_int(x[16 * j + ii] / d);
      L[16 * j + ii] = static_cast<int8_t>(std::max(-32, std::min(31, l)) + 32);
    }
  }
}

void q4_k_ref_block(const float* x, BlockQ4_K* y) {
  uint8_t L[QK_K];
  q45_k_ref_scales(x, 15, -1.f, 0.1f, 20, &y->d, &y->dmin, y->scales, L);
  pack_q4_k(L, y);
}

void q5_k_ref_block(const float* x, BlockQ5_K* y) {
  uint8_t L[QK_K];
  q45_k_ref_scales(x, 31, -0.5f, 0.1f, 15, &y->d, &y->dmin, y->scales, L);
  pack_q5_k(L, y);
}

void q6_k_ref_block(const float* x, BlockQ6_K* y) {
  int8_t L[QK_K];
  float sub_scale[QK_K / 16];
  float max_scale = 0, max_abs_scale = 0;
  for (int ib = 0; ib < QK_K / 16; ++ib) {
    sub_scale[ib] = symmetric_fit_ref(16, 32, x + 16 * ib, L + 16 * ib);
    const float abs_scale = std::fabs(sub_scale[ib]);
    if (abs_scale > max_abs_scale) {
      max_abs_scale = abs_scale;
      max_scale = sub_scale[ib];
    }
  }
  if (max_abs_scale < kGroupMaxEps) {
    std::memset(y, 0, sizeof(*y));
    return;
  }
  const float iscale = -128.f / max_scale;
  y->d = f2h(1 / iscale);
  for (int ib = 0; ib < QK_K / 16; ++ib)
    y->scales[ib] = static_cast<int8_t>(std::min(127, nearest_int(iscale * sub_scale[ib])));
  requantize_q6_k(x, *y, L);
  pack_q6_k(L, y);
}

void quantize_q4_k(const float* x, BlockQ4_K* y, int64_t n, const float* imp) {
  for (int64_t i = 0; i < n / QK_K; ++i) {
    if (imp) {
      q4_k_weighted_block(x + i * QK_K, imp + i * QK_K, y + i);
    } else {
      q4_k_ref_block(x + i * QK_K, y + i);
    }
  }
}

void quantize_q5_k(const float* x, BlockQ5_K* y, int64_t n, const float* imp) {
  for (int64_t i = 0; i < n / QK_K; ++i) {
    if (imp) {
      q5_k_weighted_block(x + i * QK_K, imp + i * QK_K, y + i);
    } else {
      q5_k_ref_block(x + i * QK_K, y + i);
    }
  }
}

void quantize_q6_k(const float* x, BlockQ6_K* y, int64_t n, const float* imp) {
  for (int64_t i = 0; i < n / QK_K; ++i) {
    if (imp) {
      q6_k_weighted_block(x + i * QK_K, imp + i * QK_K, y + i);
    } else {
      q6_k_ref_block(x + i * QK_K, y + i);
    }
  }
}

// ggml's quantize_row_q8_K_ref. The grid is [-127, 127] with the largest
// magnitude at -127 (ggml changed -128 to -127 for its SIMD kernels); d is a
// plain float. bsums are per-16 sums of qs so K-quant dots can apply the
// sub-block mins with one multiply per 16 weights.
void quantize_q8_k(const float* x, BlockQ8_K* y, int64_t n) {
  for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
    float max = 0, amax = 0;
    for (int j = 0; j < QK_K; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    if (amax == 0) {
      // ggml leaves bsums unwritten here; zero is their true value.
      std::memset(&y[i], 0, sizeof(y[i]));
      continue;
    }
    const float iscale = -127.f / max;
    for (int j = 0; j < QK_K; ++j)
      y[i].qs[j] = static_cast<int8_t>(std::min(127, nearest_int(iscale * x[j])));
    for (int j = 0; j < QK_K / 16; ++j) {
      int sum = 0;
      for (int ii = 0; ii < 16; ++ii) sum += y[i].qs[j * 16 + ii];
      y[i].bsums[j] = static_cast<int16_t>(sum);
    }
    y[i].d = 1 / iscale;
  }
}

void dequantize_q4_k(const BlockQ4_K* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n / QK_K; ++i) {
    const float d = h2f(x[i].d), dmin = h2f(x[i].dmin);
    const uint8_t* q = x[i].qs;
    for (int j = 0; j < QK_K / 64; ++j) {
      uint8_t sc, m;
      get_scale_min_k4(2 * j, x[i].scales, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      get_scale_min_k4(2 * j + 1, x[i].scales, &sc, &m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l) *y++ = d1 * (q[l] & 0xF) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * (q[l] >> 4) - m2;
      q += 32;
    }
  }
}

void dequantize_q5_k(const BlockQ5_K* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n / QK_K; ++i) {
    const float d = h2f(x[i].d), dmin = h2f(x[i].dmin);
    const uint8_t* ql = x[i].qs;
    const uint8_t* qh = x[i].qh;
    uint8_t u1 = 1, u2 = 2;
    for (int j = 0; j < QK_K / 64; ++j) {
      uint8_t sc, m;
      get_scale_min_k4(2 * j, x[i].scales, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      get_scale_min_k4(2 * j + 1, x[i].scales, &sc, &m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l) *y++ = d1 * ((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * ((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
      ql += 32;
      u1 <<= 2;
      u2 <<= 2;
    }
  }
}

void dequantize_q6_k(const BlockQ6_K* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n / QK_K; ++i) {
    const float d = h2f(x[i].d);
    const uint8_t* ql = x[i].ql;
    const uint8_t* qh = x[i].qh;
    const int8_t* sc = x[i].scales;
    for (int half = 0; half < 2; ++half) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l + 0] = d * sc[is + 0] * q1;
        y[l + 32] = d * sc[is + 2] * q2;
        y[l + 64] = d * sc[is + 4] * q3;
        y[l + 96] = d * sc[is + 6] * q4;
      }
      y += 128;
      ql += 64;
      qh += 32;
      sc += 8;
    }
  }
}

void dequantize_q8_k(const BlockQ8_K* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n / QK_K; ++i)
    for (int j = 0; j < QK_K; ++j) *y++ = x[i].d * x[i].qs[j];
}

}  // namespace brisk::quant::detail
