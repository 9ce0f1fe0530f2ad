// SPDX-License-Identifier: MIT
// Importance-weighted K-quant encoders (one super-block each).
//
// Two levels are fitted: each sub-block's scale (and min) against the
// element weights, then the 6- or 8-bit codes of those scales against how
// much a scale error costs. A scale error delta in sub-block j moves element
// i by delta*L_i, costing delta^2 * sum_i w_i*L_i^2, and a min error costs
// delta^2 * sum_i w_i; those sums are the weights of the second fit.
//
// The result is compared with the reference encoding on the decoded
// super-block and only kept if its weighted error is lower.
#include <algorithm>
#include <cstring>

#include "quant/quant_internal.h"
#include "quant/quant_k_internal.h"

namespace brisk::quant::detail {

namespace {

constexpr int kSub45 = QK_K / 32;  // Q4_K/Q5_K sub-blocks of 32
constexpr int kSub6 = QK_K / 16;   // Q6_K sub-blocks of 16

inline int clamp_int(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

// Weighted error of one Q4_K/Q5_K sub-block of 32 decoded with codes (ls, lm)
// under super-scales (d, dmin), levels re-picked for those codes. The decode
// arithmetic mirrors dequantize_q4_k: (d*ls)*l - dmin*lm.
double sub_error_45(const float* x, const float* w, int nmax, float d, float dmin, int ls, int lm) {
  const float ds = d * static_cast<float>(ls);
  const float dm = dmin * static_cast<float>(lm);
  double e = 0;
  for (int i = 0; i < 32; ++i) {
    const int l = ds == 0 ? 0 : clamp_int(nearest_int((x[i] + dm) / ds), 0, nmax);
    const double diff = static_cast<double>(x[i]) - static_cast<double>(ds * l - dm);
    e += static_cast<double>(w[i]) * diff * diff;
  }
  return e;
}

// Same for a Q6_K sub-block of 16 with signed code sc: (d*sc)*l.
double sub_error_6(const float* x, const float* w, float d, int sc) {
  const float ds = d * static_cast<float>(sc);
  double e = 0;
  for (int i = 0; i < 16; ++i) {
    const int l = ds == 0 ? 0 : clamp_int(nearest_int(x[i] / ds), -32, 31);
    const double diff = static_cast<double>(x[i]) - static_cast<double>(ds * l);
    e += static_cast<double>(w[i]) * diff * diff;
  }
  return e;
}

// Fills d, dmin, scales and levels L for Q4_K (nmax 15) or Q5_K (nmax 31).
void q45_k_weighted_scales(const float* x, const float* w, int nmax, uint16_t* d16,
                           uint16_t* dmin16, uint8_t* scales, uint8_t* L) {
  float sub_scale[kSub45], sub_min[kSub45], cost_scale[kSub45], cost_min[kSub45];
  int Li[32];
  for (int j = 0; j < kSub45; ++j) {
    float m = 0;
    sub_scale[j] = fit_affine(x + 32 * j, w + 32 * j, 32, nmax, true, false, Li, &m);
    sub_min[j] = -m;
    double sl2 = 0, s1 = 0;
    for (int i = 0; i < 32; ++i) {
      L[32 * j + i] = static_cast<uint8_t>(Li[i]);
      sl2 += static_cast<double>(w[32 * j + i]) * Li[i] * Li[i];
      s1 += w[32 * j + i];
    }
    cost_scale[j] = static_cast<float>(sl2);
    cost_min[j] = static_cast<float>(s1);
  }
  int Ls[kSub45], Lm[kSub45];
  const float d = fit_levels_fp16(sub_scale, cost_scale, kSub45, 63, Ls);
  const float dmin = fit_levels_fp16(sub_min, cost_min, kSub45, 63, Lm);
  // Rounding the sub-block fits to 6-bit codes was done per value; now that
  // the super-scales are fixed, the neighbouring codes are tried against the
  // real objective, which often recovers part of that rounding loss.
  for (int j = 0; j < kSub45; ++j) {
    const float* xs = x + 32 * j;
    const float* ws = w + 32 * j;
    double best = sub_error_45(xs, ws, nmax, d, dmin, Ls[j], Lm[j]);
    const int ls0 = Ls[j], lm0 = Lm[j];
    for (int ls = std::max(0, ls0 - 1); ls <= std::min(63, ls0 + 1); ++ls) {
      for (int lm = std::max(0, lm0 - 1); lm <= std::min(63, lm0 + 1); ++lm) {
        const double e = sub_error_45(xs, ws, nmax, d, dmin, ls, lm);
        if (e < best) {
          best = e;
          Ls[j] = ls;
          Lm[j] = lm;
        }
      }
    }
  }
  std::memset(scales, 0, K_SCALE_SIZE);
  for (int j = 0; j < kSub45; ++j)
    set_scale_min_k4(j, scales, static_cast<uint8_t>(Ls[j]), static_cast<uint8_t>(Lm[j]));
  *d16 = f2h(d);
  *dmin16 = f2h(dmin);
  requantize_q45_k(x, nmax, *d16, *dmin16, scales, L);
}

}  // namespace

void q4_k_weighted_block(const float* x, const float* w, BlockQ4_K* y) {
  q4_k_ref_block(x, y);
  float dec[QK_K];
  dequantize_q4_k(y, dec, QK_K);
  const double ref_err = weighted_sq_error(x, dec, w, QK_K);

  BlockQ4_K cand;
  uint8_t L[QK_K];
  q45_k_weighted_scales(x, w, 15, &cand.d, &cand.dmin, cand.scales, L);
  pack_q4_k(L, &cand);
  dequantize_q4_k(&cand, dec, QK_K);
  if (weighted_sq_error(x, dec, w, QK_K) < ref_err) *y = cand;
}

void q5_k_weighted_block(const float* x, const float* w, BlockQ5_K* y) {
  q5_k_ref_block(x, y);
  float dec[QK_K];
  dequantize_q5_k(y, dec, QK_K);
  const double ref_err = weighted_sq_error(x, dec, w, QK_K);

  BlockQ5_K cand;
  uint8_t L[QK_K];
  q45_k_weighted_scales(x, w, 31, &cand.d, &cand.dmin, cand.scales, L);
  pack_q5_k(L, &cand);
  dequantize_q5_k(&cand, dec, QK_K);
  if (weighted_sq_error(x, dec, w, QK_K) < ref_err) *y = cand;
}

void q6_k_weighted_block(const float* x, const float* w, BlockQ6_K* y) {
  q6_k_ref_block(x, y);
  float dec[QK_K];
  dequantize_q6_k(y, dec, QK_K);
  const double ref_err = weighted_sq_error(x, dec, w, QK_K);

  BlockQ6_K cand;
  std::memset(&cand, 0, sizeof(cand));
  int8_t L[QK_K];
  float sub_scale[kSub6], cost[kSub6];
  int Li[16];
  for (int j = 0; j < kSub6; ++j) {
    sub_scale[j] = fit_symmetric(x + 16 * j, w + 16 * j, 16, -32, 31, false, Li);
    double sl2 = 0;
    for (int i = 0; i < 16; ++i) {
      L[16 * j + i] = static_cast<int8_t>(Li[i] + 32);
      sl2 += static_cast<double>(w[16 * j + i]) * Li[i] * Li[i];
    }
    cost[j] = static_cast<float>(sl2);
  }
  int Ls[kSub6];
  const float d = fit_symmetric(sub_scale, cost, kSub6, -128, 127, true, Ls);
  if (d == 0) return;  // nothing to improve on: the reference block stands
  cand.d = f2h(d);
  // As for Q4_K: neighbouring codes, judged by the real objective.
  for (int j = 0; j < kSub6; ++j) {
    double best = sub_error_6(x + 16 * j, w + 16 * j, d, Ls[j]);
    const int sc0 = Ls[j];
    for (int sc = std::max(-128, sc0 - 2); sc <= std::min(127, sc0 + 2); ++sc) {
      const double e = sub_error_6(x + 16 * j, w + 16 * j, d, sc);
      if (e < best) {
        best = e;
        Ls[j] = sc;
      }
    }
    cand.scales[j] = static_cast<int8_t>(Ls[j]);
  }
  requantize_q6_k(x, cand, L);
  pack_q6_k(L, &cand);
  dequantize_q6_k(&cand, dec, QK_K);
  if (weighted_sq_error(x, dec, w, QK_K) < ref_err) *y = cand;
}

}  // namespace brisk::quant::detail
