// SPDX-License-Identifier: MIT
// The sampler's draws follow the distribution it is asked for, with and
// without filters (the unfiltered path draws without sorting).
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <vector>

#include "sample/sampler.h"

using brisk::Sampler;
using brisk::SamplerParams;

namespace {

// How often each of the tokens is drawn in n draws.
std::vector<double> frequencies(const SamplerParams& p, const std::vector<float>& logits, int n) {
  Sampler s(p);
  std::vector<double> f(logits.size());
  for (int i = 0; i < n; ++i) f[static_cast<size_t>(s.sample(logits.data(), static_cast<int>(logits.size())))] += 1.0 / n;
  return f;
}

SamplerParams unfiltered(float temperature) {
  SamplerParams p;
  p.temperature = temperature;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = 7;
  return p;
}

}  // namespace

TEST_CASE("sampler: with no filter, draws follow softmax(logits / temperature)", "[sampler]") {
  // Token 3 is ruled out (-Inf); the others are unsorted on purpose.
  const std::vector<float> logits = {std::log(2.0f), 0.0f, std::log(4.0f), -INFINITY, std::log(1.0f) - 0.5f};
  for (float temp : {1.0f, 0.5f}) {
    std::vector<double> want(logits.size());
    double sum = 0;
    for (size_t i = 0; i < logits.size(); ++i) sum += want[i] = std::exp(logits[i] / temp);
    const std::vector<double> got = frequencies(unfiltered(temp), logits, 40000);
    for (size_t i = 0; i < logits.size(); ++i) {
      INFO("temperature " << temp << ", token " << i);
      CHECK(got[i] == Approx(want[i] / sum).margin(0.01));
    }
    CHECK(got[3] == 0.0);
  }
}

TEST_CASE("sampler: the unfiltered draw repeats with its seed and matches the sorted path's distribution", "[sampler]") {
  std::vector<float> logits(1000);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>((i * 37) % 101) / 25.0f;
  SamplerParams p = unfiltered(0.8f);
  Sampler a(p), b(p);
  for (int i = 0; i < 200; ++i) CHECK(a.sample(logits.data(), 1000) == b.sample(logits.data(), 1000));
  // Both paths against the exact distribution, tokens grouped by their
  // logit (101 levels): top_p just below 1 keeps nearly every token but
  // takes the sorted path.
  SamplerParams sorted = p;
  sorted.top_p = 0.9999f;
  std::vector<double> want(101);
  double sum = 0;
  for (float l : logits) sum += std::exp(l / 0.8);
  for (float l : logits) want[static_cast<size_t>(std::lround(l * 25))] += std::exp(l / 0.8) / sum;
  for (const SamplerParams& q : {p, sorted}) {
    const std::vector<double> f = frequencies(q, logits, 30000);
    std::vector<double> got(101);
    for (size_t i = 0; i < logits.size(); ++i) got[static_cast<size_t>(std::lround(logits[i] * 25))] += f[i];
    double tv = 0;
    for (size_t g = 0; g < 101; ++g) tv += std::abs(got[g] - want[g]) / 2;
    INFO("top_p " << q.top_p);
    CHECK(tv < 0.05);
  }
}
