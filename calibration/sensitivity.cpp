// SPDX-License-Identifier: MIT
#include "calibration/sensitivity.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "calibration/eval.h"
#include "core/error.h"
#include "quant/quant.h"
#include "quantize/recipe.h"

namespace brisk::calib {

namespace {

std::vector<Matrix*> matrices_named(Weights& w, const std::string& name) {
  std::vector<Matrix*> out;
  auto check = [&](Matrix& m) {
    if (m.name == name) out.push_back(&m);
  };
  check(w.token_embd);
  check(w.output);
  for (LayerWeights& L : w.layers)
    for (Matrix* m : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) check(*m);
  return out;
}

// Mean KL(base || current) over every position of the sample chunks.
double sample_kld(Evaluator& ev, const std::vector<std::vector<int32_t>>& chunks, const std::vector<float>& base_lp) {
  const int nv = ev.n_vocab();
  std::vector<float> lp(nv);
  double sum = 0;
  uint64_t n = 0;
  size_t row = 0;
  for (const auto& ch : chunks) {
    const float* logits = ev.run(ch.data(), static_cast<int>(ch.size()));
    for (size_t j = 0; j < ch.size(); ++j, ++row) {
      log_softmax(logits + j * nv, nv, lp.data());
      const float* b = base_lp.data() + row * nv;
      double kl = 0;
      for (int v = 0; v < nv; ++v) kl += std::exp(static_cast<double>(b[v])) * (b[v] - lp[v]);
      sum += std::max(kl, 0.0);
      ++n;
    }
  }
  return n ? sum / n : 0;
}

}  // namespace

std::vector<TensorSensitivity> measure_sensitivity(const Model& source, const std::vector<quantize::TensorPlan>& plan,
                                                   const quantize::ImportanceMap& importance,
                                                   const SensitivityOptions& o) {
  EvalOptions eo;
  eo.n_ctx = o.n_ctx;
  eo.n_threads = o.n_threads;
  Evaluator ev(source, eo);
  const int nv = ev.n_vocab();
  const bool measure = o.measure_kl && !o.sample_chunks.empty();
  std::vector<float> base_lp;
  if (measure) {
    for (const auto& ch : o.sample_chunks) {
      const float* logits = ev.run(ch.data(), static_cast<int>(ch.size()));
      const size_t at = base_lp.size();
      base_lp.resize(at + ch.size() * nv);
      for (size_t j = 0; j < ch.size(); ++j) log_softmax(logits + j * nv, nv, base_lp.data() + at + j * nv);
    }
  }
  size_t n_mat = 0;
  for (const auto& t : plan) n_mat += t.is_matrix;
  std::vector<TensorSensitivity> out;
  std::vector<float> src_buf, deq;
  std::vector<std::vector<uint8_t>> qbuf;
  for (const quantize::TensorPlan& t : plan) {
    if (!t.is_matrix) continue;
    if (o.progress && !o.progress(out.size(), n_mat, t.name)) fail(BRISK_ERR_CANCELLED, "sensitivity measurement cancelled");
    const gguf::TensorInfo& ti = *source.file().find_tensor(t.name);
    const int64_t cols = ti.ne[0], rows = ti.n_rows();
    const float* x;
    if (ti.type == TensorType::F32) {
      x = reinterpret_cast<const float*>(ti.data);
    } else {
      src_buf.resize(static_cast<size_t>(cols * rows));
      for (int64_t r = 0; r < rows; ++r)
        quant::dequantize_row(ti.type, ti.data + r * row_bytes(ti.type, cols), src_buf.data() + r * cols, cols);
      x = src_buf.data();
    }
    auto it = importance.find(t.name);
    const float* imp = it != importance.end() ? it->second.data() : nullptr;
    TensorSensitivity ts;
    ts.name = t.name;
    std::vector<TensorType> types;
    for (TensorType T : o.types)
      if (quantize::fit_type(T, cols) == T) types.push_back(T);
    if (types.empty()) types.push_back(TensorType::F16);  // nothing fits the rows: keep it in F16
    qbuf.assign(types.size(), {});
    deq.resize(static_cast<size_t>(cols));
    for (size_t k = 0; k < types.size(); ++k) {
      Candidate c;
      c.type = types[k];
      c.bytes = row_bytes(c.type, cols) * static_cast<uint64_t>(rows);
      qbuf[k].resize(c.bytes);
      quantize::quantize_rows(c.type, x, qbuf[k].data(), rows, cols, imp, &ev.pool());
      const size_t rb = row_bytes(c.type, cols);
      double err = 0;
      for (int64_t r = 0; r < rows; ++r) {
        quant::dequantize_row(c.type, qbuf[k].data() + r * rb, deq.data(), cols);
        for (int64_t j = 0; j < cols; ++j) {
          const double d = static_cast<double>(x[r * cols + j]) - deq[j];
          err += (imp ? imp[j] : 1.0f) * d * d;
        }
      }
      c.error = err;
      ts.candidates.push_back(c);
    }
    // Cheapest first; among equal sizes the smaller error first.
    std::vector<size_t> idx(types.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
      const Candidate &x1 = ts.candidates[a], &x2 = ts.candidates[b];
      return x1.bytes != x2.bytes ? x1.bytes < x2.bytes : x1.error < x2.error;
    });
    std::vector<Candidate> sorted;
    for (size_t i : idx) sorted.push_back(ts.candidates[i]);
    ts.candidates = sorted;
    double alpha = 1.0;
    if (measure) {
      auto measure_at = [&](size_t k_sorted) {
        const size_t k = idx[k_sorted];
        const Candidate& c = ts.candidates[k_sorted];
        std::vector<Matrix*> ms = matrices_named(ev.weights(), t.name);
        std::vector<Matrix> saved;
        for (Matrix* m : ms) {
          saved.push_back(*m);
          m->type = c.type;
          m->row_bytes = row_bytes(c.type, cols);
          m->data = qbuf[k].data();
          m->packed = false;
        }
        const double kl = sample_kld(ev, o.sample_chunks, base_lp);
        for (size_t i = 0; i < ms.size(); ++i) *ms[i] = saved[i];
        return kl;
      };
      ts.measured_kld = measure_at(0);
      ts.candidates[0].measured = ts.measured_kld;
      alpha = ts.candidates[0].error > 0 ? ts.measured_kld / ts.candidates[0].error : 0.0;
      if (o.measure_all_types)
        for (size_t k = 1; k < ts.candidates.size(); ++k) ts.candidates[k].measured = measure_at(k);
    }
    for (Candidate& c : ts.candidates) c.damage = alpha * c.error;
    out.push_back(std::move(ts));
  }
  if (o.progress) o.progress(n_mat, n_mat, "");
  return out;
}

double allocate(std::vector<TensorSensitivity>& ts, uint64_t budget) {
  uint64_t min_bytes = 0;
  for (const auto& t : ts) min_bytes += t.candidates.front().bytes;
  if (min_bytes > budget)
    fail(BRISK_ERR_INVALID_ARGUMENT, "the size budget is too small: the weight matrices need at least " +
                                         std::to_string(min_bytes) + " bytes, the budget leaves " + std::to_string(budget));
  // Multiple-choice knapsack by dynamic programming over the budget in units
  // (sizes rounded up, so the result never exceeds the budget).
  const uint64_t unit = std::max<uint64_t>(1, budget / 20000 + 1);
  const size_t cap = static_cast<size_t>(budget / unit);
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> best(cap + 1, 0.0), next(cap + 1);
  std::vector<std::vector<uint8_t>> choice(ts.size(), std::vector<uint8_t>(cap + 1, 0));
  for (size_t i = 0; i < ts.size(); ++i) {
    std::fill(next.begin(), next.end(), inf);
    for (size_t b = 0; b <= cap; ++b) {
      for (size_t k = 0; k < ts[i].candidates.size(); ++k) {
        const size_t u = static_cast<size_t>((ts[i].candidates[k].bytes + unit - 1) / unit);
        if (u > b || best[b - u] == inf) continue;
        const double v = best[b - u] + ts[i].candidates[k].damage;
        if (v < next[b]) {
          next[b] = v;
          choice[i][b] = static_cast<uint8_t>(k);
        }
      }
    }
    best.swap(next);
  }
  if (best[cap] == inf) {
    // Rounding up to units can lose a budget that fits exactly: take the cheapest.
    for (auto& t : ts) t.chosen = 0;
    double d = 0;
    for (auto& t : ts) d += t.candidates[0].damage;
    return d;
  }
  size_t b = cap;
  double total = 0;
  for (size_t i = ts.size(); i-- > 0;) {
    const size_t k = choice[i][b];
    ts[i].chosen = k;
    total += ts[i].candidates[k].damage;
    b -= static_cast<size_t>((ts[i].candidates[k].bytes + unit - 1) / unit);
  }
  return total;
}

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  auto ranks = [](const std::vector<double>& v) {
    std::vector<size_t> idx(v.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::sort(idx.begin(), idx.end(), [&](size_t x, size_t y) { return v[x] < v[y]; });
    std::vector<double> r(v.size());
    for (size_t i = 0; i < idx.size(); ++i) r[idx[i]] = static_cast<double>(i);
    return r;
  };
  const size_t n = a.size();
  if (n < 2 || b.size() != n) return 0;
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  double d2 = 0;
  for (size_t i = 0; i < n; ++i) d2 += (ra[i] - rb[i]) * (ra[i] - rb[i]);
  return 1.0 - 6.0 * d2 / (static_cast<double>(n) * (static_cast<double>(n) * n - 1));
}

}  // namespace brisk::calib
