// SPDX-License-Identifier: MIT
#include "sample/sampler.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "core/error.h"
#include "kernels/vec.h"

namespace brisk {

namespace {

// NaN would make the sort's comparison inconsistent (undefined behaviour) and
// argmax return token 0; +Inf turns the softmax into NaN. -Inf is a token
// ruled out and is fine, as long as some token remains.
void check_logits(const float* logits, int n_vocab) {
  bool any_finite = false;
  for (int i = 0; i < n_vocab; ++i) {
    const float l = logits[i];
    if (std::isnan(l) || l == INFINITY)
      fail(BRISK_ERR_BAD_FORMAT, std::string("the model produced a non-finite logit (") + (std::isnan(l) ? "NaN" : "+Inf") +
                                     ") for token " + std::to_string(i) + " of " + std::to_string(n_vocab) +
                                     "; its weights are probably corrupt");
    any_finite |= l != -INFINITY;
  }
  if (!any_finite && n_vocab > 0)
    fail(BRISK_ERR_BAD_FORMAT, "every one of the " + std::to_string(n_vocab) + " logits is -Inf: no token can be sampled");
}

}  // namespace

Sampler::Sampler(const SamplerParams& params) : p_(params), rng_(params.seed) {}

void Sampler::reset() {
  rng_.seed(p_.seed);
  recent_.clear();
}

void Sampler::accept(int32_t token) {
  if (p_.repeat_last_n <= 0) return;
  recent_.push_back(token);
  while (static_cast<int>(recent_.size()) > p_.repeat_last_n) recent_.pop_front();
}

int32_t Sampler::sample(const float* logits, int n_vocab) {
  if (n_vocab <= 0) fail(BRISK_ERR_INVALID_ARGUMENT, "sampling from an empty vocabulary");
  check_logits(logits, n_vocab);
  // The logits with penalties, in vocabulary order; the (logit, id) pairs
  // are made only for the filters, which sort.
  const size_t n_all = static_cast<size_t>(n_vocab);
  logit_.assign(logits, logits + n_all);

  // Repetition penalty (as llama.cpp/CTRL): shrink positive logits, grow
  // negative ones, once per distinct recent token.
  if (p_.repeat_penalty != 1.0f && !recent_.empty()) {
    std::unordered_set<int32_t> seen(recent_.begin(), recent_.end());
    for (int32_t t : seen) {
      if (t < 0 || t >= n_vocab) continue;
      float& l = logit_[t];
      l = l > 0 ? l / p_.repeat_penalty : l * p_.repeat_penalty;
    }
  }

  if ((p_.presence_penalty != 0.0f || p_.frequency_penalty != 0.0f) && !recent_.empty()) {
    std::unordered_map<int32_t, int> count;
    for (int32_t t : recent_) ++count[t];
    for (const auto& [t, c] : count) {
      if (t < 0 || t >= n_vocab) continue;
      logit_[t] -= p_.presence_penalty + p_.frequency_penalty * static_cast<float>(c);
    }
  }

  if (p_.temperature <= 0.0f) {
    // Greedy; ties go to the lowest id, as argmax in llama.cpp and run.c.
    size_t best = 0;
    for (size_t i = 1; i < n_all; ++i)
      if (logit_[i] > logit_[best]) best = i;
    return static_cast<int32_t>(best);
  }

  // No filter (top-k off, top-p 1, min-p 0, as OpenAI-style requests ask by
  // default): the draw needs no order, so the whole vocabulary is not sorted
  // for every token (that sort, on the thread that runs the engine's steps,
  // cost more than a decode step's share of the matmuls), and its
  // exponentials are the vector kernel's, for the same reason.
  if ((p_.top_k <= 0 || static_cast<size_t>(p_.top_k) >= n_all) && p_.top_p >= 1.0f && p_.min_p <= 0.0f) {
    float mx = logit_[0];
    for (float l : logit_) mx = std::max(mx, l);
    prob_.resize(n_all);
    const double total = kernels::vec_kernels().exp_sum(prob_.data(), logit_.data(), static_cast<int64_t>(n_all), mx,
                                                         1.0f / p_.temperature);
    const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53 * total;
    double acc = 0;
    for (size_t i = 0; i < n_all; ++i) {
      acc += prob_[i];
      if (u < acc) return static_cast<int32_t>(i);
    }
    // Rounding left u at or past the last sum: the last token that can be drawn.
    for (size_t i = n_all; i-- > 0;)
      if (prob_[i] > 0) return static_cast<int32_t>(i);
    return n_vocab - 1;
  }

  cand_.resize(n_all);
  for (size_t i = 0; i < n_all; ++i) cand_[i] = {logit_[i], static_cast<int32_t>(i)};
  auto by_logit = [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  size_t n = cand_.size();
  if (p_.top_k > 0 && static_cast<size_t>(p_.top_k) < n) {
    std::partial_sort(cand_.begin(), cand_.begin() + p_.top_k, cand_.end(), by_logit);
    n = static_cast<size_t>(p_.top_k);
  } else {
    std::sort(cand_.begin(), cand_.end(), by_logit);
  }

  // Filters work on the untempered distribution, in llama.cpp's order
  // (top-k, top-p, min-p, then temperature), so settings mean the same there.
  std::vector<double> prob(n);
  auto softmax = [&](double temp) {
    const double mx = cand_[0].first / temp;
    double sum = 0;
    for (size_t i = 0; i < n; ++i) sum += prob[i] = std::exp(cand_[i].first / temp - mx);
    for (size_t i = 0; i < n; ++i) prob[i] /= sum;
  };
  softmax(1.0);
  // top-p: the smallest prefix whose mass reaches top_p.
  if (p_.top_p < 1.0f) {
    double mass = 0;
    for (size_t i = 0; i < n; ++i) {
      mass += prob[i];
      if (mass >= p_.top_p) {
        n = i + 1;
        break;
      }
    }
  }
  // min-p: drop tokens less likely than min_p times the most likely one.
  if (p_.min_p > 0.0f) {
    const double floor = prob[0] * p_.min_p;
    size_t keep = 1;
    while (keep < n && prob[keep] >= floor) ++keep;
    n = keep;
  }
  softmax(p_.temperature);

  double total = 0;
  for (size_t i = 0; i < n; ++i) total += prob[i];
  // A uniform draw from our own 53-bit conversion: std::uniform_real_distribution
  // is not specified bit-for-bit across standard libraries, and the same seed
  // must give the same text everywhere.
  const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53 * total;
  double acc = 0;
  for (size_t i = 0; i < n; ++i) {
    acc += prob[i];
    if (u < acc) return cand_[i].second;
  }
  return cand_[n - 1].second;
}

}  // namespace brisk
