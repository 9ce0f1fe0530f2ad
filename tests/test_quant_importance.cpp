// SPDX-License-Identifier: MIT
// Importance-weighted quantization: the weighted error it reaches must beat
// plain (ggml reference) quantization when importance is skewed, and never
// be worse, since every block keeps the better of the two encodings.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "quant/quant.h"
#include "quant_test_util.h"

using brisk::TensorType;
using brisk::test::gaussian;
using brisk::test::roundtrip;

namespace {

constexpr int kRows = 24;
constexpr int kCols = 512;

double weighted_error(const std::vector<float>& x, const std::vector<float>& y,
                      const std::vector<float>& w) {
  double e = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = double(x[i]) - y[i];
    e += w[i % w.size()] * d * d;
  }
  return e;
}

// Weighted error of the whole matrix, each row quantized with `imp` (or without).
double matrix_error(TensorType t, const std::vector<float>& m, const std::vector<float>& imp,
                    bool use_importance) {
  double e = 0;
  for (int r = 0; r < kRows; ++r) {
    std::vector<float> row(m.begin() + r * kCols, m.begin() + (r + 1) * kCols);
    std::vector<float> y = roundtrip(t, row, use_importance ? imp.data() : nullptr);
    for (float v : y) REQUIRE(std::isfinite(v));
    e += weighted_error(row, y, imp);
  }
  return e;
}

// Heavy-tailed weights with log-normal column importance (as activation
// statistics look), plus a few columns that matter a lot more.
void synthetic(std::vector<float>* m, std::vector<float>* imp) {
  *m = gaussian(size_t(kRows) * kCols, 11);
  std::mt19937 rng(12);
  std::student_t_distribution<float> heavy(3.f);
  for (float& v : *m) v = 0.02f * heavy(rng);
  std::normal_distribution<float> n01(0.f, 1.f);
  imp->resize(kCols);
  for (float& w : *imp) w = std::exp(1.5f * n01(rng));
  for (int c = 0; c < kCols; c += 37) (*imp)[c] *= 50.f;
}

}  // namespace

TEST_CASE("importance lowers the weighted error for every 4/5/6/8-bit weight type", "[quant]") {
  std::vector<float> m, imp;
  synthetic(&m, &imp);
  for (TensorType t : {TensorType::Q4_0, TensorType::Q4_1, TensorType::Q8_0, TensorType::Q4_K,
                       TensorType::Q5_K, TensorType::Q6_K}) {
    const double plain = matrix_error(t, m, imp, false);
    const double weighted = matrix_error(t, m, imp, true);
    INFO("type " << brisk::type_name(t) << ": plain " << plain << ", weighted " << weighted
                 << " (ratio " << weighted / plain << ")");
    CHECK(weighted < 0.8 * plain);
  }
}

TEST_CASE("importance never makes a block worse, whatever the weights", "[quant]") {
  std::vector<float> m, imp;
  synthetic(&m, &imp);
  std::vector<float> uniform(kCols, 1.f);
  std::vector<float> sparse(kCols, 0.f);  // mostly zero importance
  for (int c = 5; c < kCols; c += 64) sparse[c] = 1.f;
  for (TensorType t : {TensorType::Q4_0, TensorType::Q4_1, TensorType::Q8_0, TensorType::Q4_K,
                       TensorType::Q5_K, TensorType::Q6_K}) {
    INFO("type " << brisk::type_name(t));
    for (const auto* w : {&imp, &uniform, &sparse}) {
      for (int r = 0; r < kRows; ++r) {
        std::vector<float> row(m.begin() + r * kCols, m.begin() + (r + 1) * kCols);
        const double plain = weighted_error(row, roundtrip(t, row), *w);
        const double weighted = weighted_error(row, roundtrip(t, row, w->data()), *w);
        REQUIRE(weighted <= plain);
      }
    }
  }
}

TEST_CASE("all-zero importance still gives a sane encoding", "[quant]") {
  std::vector<float> x = gaussian(512, 13);
  std::vector<float> zero(512, 0.f);
  for (TensorType t : {TensorType::Q4_0, TensorType::Q4_1, TensorType::Q8_0, TensorType::Q4_K,
                       TensorType::Q5_K, TensorType::Q6_K}) {
    INFO("type " << brisk::type_name(t));
    std::vector<float> y = roundtrip(t, x, zero.data());
    std::vector<float> ones(512, 1.f);
    // No preference at all falls back to the reference encoding.
    CHECK(weighted_error(x, y, ones) == weighted_error(x, roundtrip(t, x), ones));
  }
}

TEST_CASE("importance is ignored by the plain float formats", "[quant]") {
  std::vector<float> x = gaussian(64, 14);
  std::vector<float> imp(64, 3.f);
  for (TensorType t : {TensorType::F32, TensorType::F16, TensorType::BF16}) {
    CHECK(roundtrip(t, x, imp.data()) == roundtrip(t, x));
  }
}
