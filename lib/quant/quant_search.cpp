// SPDX-License-Identifier: MIT
// Importance-weighted scale searches. The objective is the one quant.h
// promises: sum_i w_i * (x_i - q_i)^2. For a fixed scale (and offset) the best
// integer level of every element is simply the nearest one, whatever its
// weight, so the weights only steer the choice of scale. We therefore try a
// handful of scales around the range-based one, refine each by weighted least
// squares, round it as it will be stored, re-pick the levels for the stored
// value and keep whichever gives the smallest weighted error; the winner is
// then polished by alternating "levels for this scale" and "least-squares
// scale for these levels" while that still helps. Scales are also anchored
// on the extreme among the "important" elements only, which lets an
// unimportant outlier be clipped instead of stretching the whole grid.
#include <algorithm>
#include <cmath>

#include "quant/quant_internal.h"

namespace brisk::quant::detail {

namespace {

constexpr int kMaxN = 256;

// Uniform weights when all are zero: the fit is then arbitrary, and
// unweighted least squares gives a sane one.
const float* usable_weights(const float* w, int n, float* buf) {
  double s = 0;
  for (int i = 0; i < n; ++i) s += w[i];
  if (s > 0 && std::isfinite(s)) return w;
  for (int i = 0; i < n; ++i) buf[i] = 1.f;
  return buf;
}

inline int clamp_level(float v, int lo, int hi) {
  // Clamp in float first: nearest_int is only exact for |v| < 2^22.
  if (!(v > static_cast<float>(lo))) return lo;
  if (!(v < static_cast<float>(hi))) return hi;
  return std::clamp(nearest_int(v), lo, hi);
}

inline float round_fp16(float v) { return h2f(f2h(v)); }

// Mean weight: elements at or above it count as important for anchoring.
float mean_weight(const float* w, int n) {
  double s = 0;
  for (int i = 0; i < n; ++i) s += w[i];
  return static_cast<float>(s / n);
}

}  // namespace

float fit_symmetric(const float* x, const float* w_in, int n, int qmin, int qmax,
                    bool fp16_scale, int* L) {
  float wbuf[kMaxN];
  const float* w = usable_weights(w_in, n, wbuf);
  const float wmean = mean_weight(w, n);

  // Signed value of largest magnitude: overall, and among important elements.
  float anchor_all = 0, anchor_imp = 0;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > std::fabs(anchor_all)) anchor_all = x[i];
    if (w[i] >= wmean && std::fabs(x[i]) > std::fabs(anchor_imp)) anchor_imp = x[i];
  }
  for (int i = 0; i < n; ++i) L[i] = 0;
  if (anchor_all == 0) return 0.f;

  double best_err = 0;
  for (int i = 0; i < n; ++i) best_err += static_cast<double>(w[i]) * x[i] * x[i];
  float best_d = 0;
  int cand[kMaxN];

  // Rounds d as it will be stored, re-picks the levels and keeps it if better.
  auto try_scale = [&](float d) {
    if (fp16_scale) d = round_fp16(d);
    if (d == 0 || !std::isfinite(d)) return false;
    const float id = 1.f / d;
    double err = 0;
    for (int i = 0; i < n; ++i) {
      cand[i] = clamp_level(x[i] * id, qmin, qmax);
      const double diff = static_cast<double>(x[i]) - static_cast<double>(d * cand[i]);
      err += static_cast<double>(w[i]) * diff * diff;
    }
    if (!(err < best_err)) return false;
    best_err = err;
    best_d = d;
    std::copy(cand, cand + n, L);
    return true;
  };
  // Weighted least-squares scale for given levels.
  auto ls_scale = [&](const int* lv) {
    double slx = 0, sll = 0;
    for (int i = 0; i < n; ++i) {
      slx += static_cast<double>(w[i]) * x[i] * lv[i];
      sll += static_cast<double>(w[i]) * lv[i] * lv[i];
    }
    return sll > 0 ? static_cast<float>(slx / sll) : 0.f;
  };

  const float anchors[2] = {anchor_all, anchor_imp};
  const int n_anchors = (anchor_imp != 0 && anchor_imp != anchor_all) ? 2 : 1;
  // The anchor maps to the negative end of the grid (as ggml does), which for
  // qmin = -qmax-1 gives one extra level on the anchor's side.
  const float span = static_cast<float>(-qmin);
  int lv[kMaxN];
  for (int a = 0; a < n_anchors; ++a) {
    for (int step = -8; step <= 8; ++step) {
      const float iscale = -span * (1.f + 0.015f * step) / anchors[a];
      for (int i = 0; i < n; ++i) lv[i] = clamp_level(iscale * x[i], qmin, qmax);
      try_scale(ls_scale(lv));
    }
  }
  // Alternate levels and scale until neither improves (a few rounds at most).
  for (int it = 0; it < 4 && try_scale(ls_scale(L)); ++it) {
  }
  return best_d;
}

float fit_affine(const float* x, const float* w_in, int n, int nmax, bool nonpositive_min,
                 bool fp16, int* L, float* m_out) {
  float wbuf[kMaxN];
  const float* w = usable_weights(w_in, n, wbuf);
  const float wmean = mean_weight(w, n);

  float lo = x[0], hi = x[0];
  float lo_imp = INFINITY, hi_imp = -INFINITY;
  double sw = 0, swx = 0;
  for (int i = 0; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
    if (w[i] >= wmean) {
      lo_imp = std::min(lo_imp, x[i]);
      hi_imp = std::max(hi_imp, x[i]);
    }
    sw += w[i];
    swx += static_cast<double>(w[i]) * x[i];
  }
  if (nonpositive_min) {
    lo = std::min(lo, 0.f);
    lo_imp = std::min(lo_imp, 0.f);
  }
  // Fallback: a constant block (d = 0, m = weighted mean, or 0 when m must be <= 0).
  float best_d = 0;
  float best_m = static_cast<float>(swx / sw);
  if (nonpositive_min) best_m = std::min(best_m, 0.f);
  if (fp16) best_m = round_fp16(best_m);
  for (int i = 0; i < n; ++i) L[i] = 0;
  double best_err = 0;
  for (int i = 0; i < n; ++i) {
    const double diff = static_cast<double>(x[i]) - best_m;
    best_err += static_cast<double>(w[i]) * diff * diff;
  }
  if (!(hi > lo)) {
    *m_out = best_m;
    return 0.f;
  }

  int cand[kMaxN];
  // Rounds (d, m) as they will be stored, re-picks the levels, keeps if better.
  auto try_fit = [&](double d, double m) {
    float df = static_cast<float>(d), mf = static_cast<float>(m);
    if (fp16) {
      df = round_fp16(df);
      mf = round_fp16(mf);
    }
    if (!(df > 0) || !std::isfinite(df) || !std::isfinite(mf)) return false;
    const float id = 1.f / df;
    double err = 0;
    for (int i = 0; i < n; ++i) {
      cand[i] = clamp_level((x[i] - mf) * id, 0, nmax);
      const double diff = static_cast<double>(x[i]) - static_cast<double>(df * cand[i] + mf);
      err += static_cast<double>(w[i]) * diff * diff;
    }
    if (!(err < best_err)) return false;
    best_err = err;
    best_d = df;
    best_m = mf;
    std::copy(cand, cand + n, L);
    return true;
  };
  // Weighted least squares for (d, m) given the levels.
  auto ls_fit = [&](const int* lv) {
    double sl = 0, sll = 0, sxl = 0;
    for (int i = 0; i < n; ++i) {
      sl += static_cast<double>(w[i]) * lv[i];
      sll += static_cast<double>(w[i]) * lv[i] * lv[i];
      sxl += static_cast<double>(w[i]) * lv[i] * x[i];
    }
    const double D = sw * sll - sl * sl;
    if (!(D > 0)) return false;
    double d = (sw * sxl - swx * sl) / D;
    double m = (sll * swx - sl * sxl) / D;
    if (nonpositive_min && m > 0) {
      m = 0;
      d = sxl / sll;
    }
    return try_fit(d, m);
  };

  const float ranges[2][2] = {{lo, hi}, {lo_imp, hi_imp}};
  const int n_ranges = (hi_imp > lo_imp && (lo_imp != lo || hi_imp != hi)) ? 2 : 1;
  int lv[kMaxN];
  for (int r = 0; r < n_ranges; ++r) {
    const float rlo = ranges[r][0], rhi = ranges[r][1];
    for (int step = -9; step <= 9; ++step) {
      const float iscale = (static_cast<float>(nmax) + 0.1f * step) / (rhi - rlo);
      for (int i = 0; i < n; ++i) lv[i] = clamp_level(iscale * (x[i] - rlo), 0, nmax);
      ls_fit(lv);
    }
  }
  // Alternate levels and (d, m) until neither improves.
  for (int it = 0; it < 4 && ls_fit(L); ++it) {
  }
  *m_out = best_m;
  return best_d;
}

float fit_levels_fp16(const float* v, const float* w_in, int n, int nmax, int* L) {
  float wbuf[kMaxN];
  const float* w = usable_weights(w_in, n, wbuf);
  float vmax = 0;
  for (int i = 0; i < n; ++i) vmax = std::max(vmax, v[i]);
  for (int i = 0; i < n; ++i) L[i] = 0;
  if (!(vmax > 0)) return 0.f;

  double best_err = 0;
  for (int i = 0; i < n; ++i) best_err += static_cast<double>(w[i]) * v[i] * v[i];
  float best_d = 0;
  int cand[kMaxN];
  for (int step = -6; step <= 6; ++step) {
    const float iscale = (static_cast<float>(nmax) + 0.1f * step) / vmax;
    double slx = 0, sll = 0;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_level(iscale * v[i], 0, nmax);
      slx += static_cast<double>(w[i]) * v[i] * l;
      sll += static_cast<double>(w[i]) * l * l;
    }
    if (sll <= 0) continue;
    const float d = round_fp16(static_cast<float>(slx / sll));
    if (!(d > 0) || !std::isfinite(d)) continue;
    double err = 0;
    for (int i = 0; i < n; ++i) {
      cand[i] = clamp_level(v[i] / d, 0, nmax);
      const double diff = static_cast<double>(v[i]) - static_cast<double>(d * cand[i]);
      err += static_cast<double>(w[i]) * diff * diff;
    }
    if (err < best_err) {
      best_err = err;
      best_d = d;
      std::copy(cand, cand + n, L);
    }
  }
  return best_d;
}

}  // namespace brisk::quant::detail
