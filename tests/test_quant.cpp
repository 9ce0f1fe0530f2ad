// SPDX-License-Identifier: MIT
// Round trips, edge cases and half-precision bit patterns for quant.h.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/quant.h"
#include "quant_test_util.h"

using brisk::TensorType;
using brisk::test::all_quant_types;
using brisk::test::block_size;
using brisk::test::gaussian;
using brisk::test::roundtrip;
namespace q = brisk::quant;

namespace {

float block_amax(const std::vector<float>& x, size_t begin, size_t len) {
  float m = 0;
  for (size_t i = begin; i < begin + len; ++i) m = std::max(m, std::fabs(x[i]));
  return m;
}

// Largest error a correct encoder may make on element i, from the format's
// grid and the half-precision rounding of its scales (2^-11 relative).
// K-quants choose scales by search, so they get RMS bounds instead.
double element_bound(TensorType t, const std::vector<float>& x, size_t i) {
  const size_t bs = static_cast<size_t>(block_size(t));
  const size_t b0 = i / bs * bs;
  const double amax = block_amax(x, b0, bs);
  const double h = std::ldexp(1.0, -11);
  switch (t) {
    case TensorType::F32: return 0;
    case TensorType::F16: return std::fabs(x[i]) * h + 6e-8;  // + half the smallest subnormal
    case TensorType::BF16: return std::fabs(x[i]) * std::ldexp(1.0, -8);
    case TensorType::Q8_0:
    case TensorType::Q8_1: return amax / 127 * (0.5 + 127 * h) * 1.0001;
    // Elements on the anchor's opposite side can be clipped by one level.
    case TensorType::Q4_0: return amax / 8 * (1 + 8 * h) * 1.0001;
    case TensorType::Q4_1: {
      const auto [mn, mx] = std::minmax_element(x.begin() + b0, x.begin() + b0 + bs);
      const double d = (*mx - *mn) / 15.0;
      return d * (0.5 + 16 * h) + std::fabs(*mn) * h * 1.0001 + 1e-12;
    }
    case TensorType::Q8_K: return amax / 127 * 0.5 * 1.0001;
    default: return INFINITY;
  }
}

// RMS error relative to the data's RMS on Gaussian rows, about 1.25x what
// the ggml reference encoders give (measured: Q4_0 0.088, Q4_1 0.078,
// Q8_0/Q8_1 0.0054, Q8_K 0.0068, Q4_K 0.071, Q5_K 0.036, Q6_K 0.018).
// K-quants choose scales by search, so they only get this bound.
double rms_limit(TensorType t) {
  switch (t) {
    case TensorType::Q4_0: return 0.11;
    case TensorType::Q4_1: return 0.10;
    case TensorType::Q8_0:
    case TensorType::Q8_1: return 0.007;
    case TensorType::Q8_K: return 0.0085;
    case TensorType::Q4_K: return 0.09;
    case TensorType::Q5_K: return 0.045;
    case TensorType::Q6_K: return 0.023;
    case TensorType::F16: return 3e-4;
    case TensorType::BF16: return 2.5e-3;
    default: return 1e-7;
  }
}
bool is_k_quant(TensorType t) {
  return t == TensorType::Q4_K || t == TensorType::Q5_K || t == TensorType::Q6_K;
}

double rel_rms_error(const std::vector<float>& x, const std::vector<float>& y) {
  double e = 0, s = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    e += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
    s += double(x[i]) * x[i];
  }
  return std::sqrt(e / s);
}

void check_element_bounds(TensorType t, const std::vector<float>& x, const std::vector<float>& y) {
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double err = std::fabs(double(x[i]) - y[i]);
    if (!(err <= element_bound(t, x, i))) {
      if (bad++ == 0) first = i;
    }
  }
  INFO("type " << brisk::type_name(t) << ", first bad element " << first << ": x=" << x[first]
               << " y=" << y[first] << " bound=" << element_bound(t, x, first));
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("quantize_row returns the row size and can_quantize lists weight formats", "[quant]") {
  for (TensorType t : all_quant_types()) {
    const int64_t n = 512;
    std::vector<float> x = gaussian(n, 1);
    std::vector<uint8_t> buf(brisk::row_bytes(t, n) + 1, 0xAB);
    CHECK(q::quantize_row(t, x.data(), buf.data(), n) == brisk::row_bytes(t, n));
    CHECK(buf.back() == 0xAB);  // nothing written past the row
  }
  for (TensorType t : {TensorType::F32, TensorType::F16, TensorType::BF16, TensorType::Q4_0,
                       TensorType::Q4_1, TensorType::Q8_0, TensorType::Q4_K, TensorType::Q5_K,
                       TensorType::Q6_K})
    CHECK(q::can_quantize(t));
  for (TensorType t : {TensorType::Q8_1, TensorType::Q8_K, TensorType::Q5_0, TensorType::Q2_K,
                       TensorType::I8})
    CHECK_FALSE(q::can_quantize(t));
  float x[32] = {};
  uint8_t buf[64];
  CHECK_THROWS(q::quantize_row(TensorType::Q5_0, x, buf, 32));
  CHECK_THROWS(q::dequantize_row(TensorType::Q3_K, buf, x, 256));
}

TEST_CASE("round trip error bounds on random data", "[quant]") {
  for (TensorType t : all_quant_types()) {
    for (uint32_t seed : {1u, 2u, 3u}) {
      // Scale varies per seed so no bound depends on data near 1.
      const float sigma = seed == 1 ? 1.f : seed == 2 ? 0.02f : 300.f;
      std::vector<float> x = gaussian(4096, seed, sigma);
      std::vector<float> y = roundtrip(t, x);
      INFO("type " << brisk::type_name(t) << " sigma " << sigma);
      if (!is_k_quant(t)) check_element_bounds(t, x, y);
      CHECK(rel_rms_error(x, y) < rms_limit(t));
      if (t == TensorType::F32) CHECK(std::memcmp(x.data(), y.data(), x.size() * 4) == 0);
    }
  }
}

TEST_CASE("all-zero blocks encode to zero scales and decode to exact zeros", "[quant]") {
  for (TensorType t : all_quant_types()) {
    std::vector<float> x(512, 0.f);
    // A zero block next to a non-zero one: the zero one must stay exactly zero.
    std::vector<float> g = gaussian(256, 9);
    std::copy(g.begin(), g.end(), x.begin() + 256);
    std::vector<uint8_t> buf(brisk::row_bytes(t, 512));
    q::quantize_row(t, x.data(), buf.data(), 512);
    std::vector<float> y(512, 1.f);
    q::dequantize_row(t, buf.data(), y.data(), 512);
    INFO("type " << brisk::type_name(t));
    for (int i = 0; i < 256; ++i) REQUIRE(y[i] == 0.f);
    for (int i = 256; i < 512; ++i) REQUIRE(std::isfinite(y[i]));
    // Importance must not change that either.
    std::vector<float> imp(512, 1.f);
    std::vector<float> yi = roundtrip(t, x, imp.data());
    for (int i = 0; i < 256; ++i) REQUIRE(yi[i] == 0.f);
  }
}

TEST_CASE("tiny magnitudes (1e-30, mixed signs) never produce NaN, inf or sign flips", "[quant]") {
  std::vector<float> x = gaussian(512, 4);
  for (float& v : x) v *= 1e-30f;
  for (TensorType t : all_quant_types()) {
    INFO("type " << brisk::type_name(t));
    for (bool weighted : {false, true}) {
      std::vector<float> imp(x.size(), 1.f);
      std::vector<float> y = roundtrip(t, x, weighted ? imp.data() : nullptr);
      const float amax = block_amax(x, 0, x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        REQUIRE(std::isfinite(y[i]));
        // Scales below half precision flush to zero: values shrink, never grow.
        REQUIRE(std::fabs(y[i] - x[i]) <= amax * 1.0001f);
        REQUIRE(y[i] * x[i] >= 0);
      }
      if (t == TensorType::F32 || t == TensorType::BF16) check_element_bounds(t, x, y);
      if (t == TensorType::Q8_K) check_element_bounds(t, x, y);  // float scale: still exact-ish
    }
  }
}

TEST_CASE("large magnitudes: in fp16 range they round-trip, beyond it scales saturate as in ggml",
          "[quant]") {
  // 2e3 * 4 sigma keeps every block scale within half precision.
  std::vector<float> x = gaussian(512, 5, 2000.f);
  for (TensorType t : all_quant_types()) {
    INFO("type " << brisk::type_name(t));
    std::vector<float> y = roundtrip(t, x);
    if (!is_k_quant(t)) check_element_bounds(t, x, y);
    CHECK(rel_rms_error(x, y) < rms_limit(t));
  }

  // 1e30 with mixed signs: F32/BF16 carry it; F16 gives signed infinity; a
  // fp16 block scale cannot hold it, so ggml (and therefore brisk) stores an
  // infinite scale. The caller must not quantize such tensors.
  std::vector<float> big = gaussian(256, 6);
  for (float& v : big) v *= 1e30f;
  check_element_bounds(TensorType::F32, big, roundtrip(TensorType::F32, big));
  check_element_bounds(TensorType::BF16, big, roundtrip(TensorType::BF16, big));
  std::vector<float> h = roundtrip(TensorType::F16, big);
  for (size_t i = 0; i < big.size(); ++i) {
    REQUIRE(std::isinf(h[i]));
    REQUIRE(std::signbit(h[i]) == std::signbit(big[i]));
  }
  q::BlockQ8_0 b8[8];
  q::quantize_row(TensorType::Q8_0, big.data(), b8, 256);
  CHECK((b8[0].d & 0x7FFF) == 0x7C00);
  q::BlockQ4_0 b4[8];
  q::quantize_row(TensorType::Q4_0, big.data(), b4, 256);
  CHECK((b4[0].d & 0x7FFF) == 0x7C00);
  // Q8_K keeps a float scale and so still works at 1e30.
  check_element_bounds(TensorType::Q8_K, big, roundtrip(TensorType::Q8_K, big));
}

TEST_CASE("a single huge outlier is kept and the rest of its block stays within the grid",
          "[quant]") {
  for (TensorType t : all_quant_types()) {
    std::vector<float> x = gaussian(512, 7);
    x[300] = 1000.f;  // in the second K-quant super-block, and in block 9 of 32
    for (bool weighted : {false, true}) {
      std::vector<float> imp(x.size(), 1.f);
      std::vector<float> y = roundtrip(t, x, weighted ? imp.data() : nullptr);
      INFO("type " << brisk::type_name(t) << (weighted ? " weighted" : ""));
      for (float v : y) REQUIRE(std::isfinite(v));
      // The outlier sets the grid, so it is reproduced closely.
      CHECK(std::fabs(y[300] - 1000.f) <= 1000.f * 0.02f);
      if (!is_k_quant(t) && !weighted) check_element_bounds(t, x, y);
      // Blocks without the outlier are untouched by it.
      std::vector<float> first(x.begin(), x.begin() + 256), yfirst(y.begin(), y.begin() + 256);
      CHECK(rel_rms_error(first, yfirst) < rms_limit(t) * 1.5);
      // Inside the outlier's block every error is at most one grid step of
      // the outlier's scale (generous for K-quants, whose sub-blocks are finer).
      const double step = 1000.0 / (t == TensorType::Q4_0 || t == TensorType::Q4_1 ? 7.5
                                    : t == TensorType::Q4_K                         ? 15
                                    : t == TensorType::Q5_K                         ? 31
                                                                                    : 63);
      const size_t bs = static_cast<size_t>(block_size(t));
      const size_t b0 = 300 / bs * bs;
      for (size_t i = b0; i < b0 + bs; ++i) CHECK(std::fabs(double(y[i]) - x[i]) <= step);
    }
  }
}

TEST_CASE("half precision conversions match known bit patterns", "[quant]") {
  struct Case {
    float f;
    uint16_t h;
  };
  const float inf = std::numeric_limits<float>::infinity();
  const Case f16_cases[] = {
      {0.f, 0x0000},
      {-0.f, 0x8000},
      {1.f, 0x3C00},
      {-2.f, 0xC000},
      {0.5f, 0x3800},
      {0.1f, 0x2E66},
      {65504.f, 0x7BFF},                      // largest finite half
      {65519.f, 0x7BFF},                      // still rounds down
      {65520.f, 0x7C00},                      // halfway to 2^16 rounds to infinity
      {inf, 0x7C00},
      {-inf, 0xFC00},
      {std::ldexp(1.f, -14), 0x0400},         // smallest normal
      {std::ldexp(1.f, -24), 0x0001},         // smallest subnormal
      {std::ldexp(1.f, -25), 0x0000},         // exactly half of it: ties to even (0)
      {std::ldexp(3.f, -25), 0x0002},         // 1.5 ulp: ties to even (2)
      {1.f + std::ldexp(1.f, -11), 0x3C00},   // tie between 0x3C00 and 0x3C01: even
      {1.f + std::ldexp(3.f, -11), 0x3C02},   // tie between 0x3C01 and 0x3C02: even
      {1.f + std::ldexp(1.f, -10), 0x3C01},   // exact
      {1e30f, 0x7C00},
      {1e-30f, 0x0000},
  };
  for (const Case& c : f16_cases) {
    INFO("f16 of " << c.f);
    CHECK(brisk::f32_to_fp16(c.f) == c.h);
    uint16_t h;
    q::quantize_row(TensorType::F16, &c.f, &h, 1);
    CHECK(h == c.h);
  }
  CHECK((brisk::f32_to_fp16(std::nanf("")) & 0x7FFF) == 0x7E00);
  CHECK(brisk::fp16_to_f32(0x3C00) == 1.f);
  CHECK(brisk::fp16_to_f32(0x7BFF) == 65504.f);
  CHECK(brisk::fp16_to_f32(0x0001) == std::ldexp(1.f, -24));
  CHECK(brisk::fp16_to_f32(0x03FF) == std::ldexp(1023.f, -24));
  CHECK(std::isinf(brisk::fp16_to_f32(0xFC00)));
  CHECK(std::isnan(brisk::fp16_to_f32(0x7E00)));
  CHECK(std::signbit(brisk::fp16_to_f32(0x8000)));

  const Case bf16_cases[] = {
      {0.f, 0x0000},
      {-0.f, 0x8000},
      {1.f, 0x3F80},
      {-2.f, 0xC000},
      {0.1f, 0x3DCD},                          // 0x3DCCCCCD rounds up
      {1.f + std::ldexp(1.f, -8), 0x3F80},     // tie: even
      {1.f + std::ldexp(3.f, -8), 0x3F82},     // tie: even
      {inf, 0x7F80},
      {-inf, 0xFF80},
      {FLT_MAX, 0x7F80},                       // rounds past the largest bf16
      {1e30f, 0x714A},                         // 0x7149F2CA rounds up
      {1e-30f, 0x0DA2},                        // 0x0DA24260
      {std::ldexp(1.f, -149), 0x0000},         // float subnormal below bf16 resolution
  };
  for (const Case& c : bf16_cases) {
    INFO("bf16 of " << c.f);
    CHECK(brisk::f32_to_bf16(c.f) == c.h);
    uint16_t h;
    q::quantize_row(TensorType::BF16, &c.f, &h, 1);
    CHECK(h == c.h);
    float back;
    q::dequantize_row(TensorType::BF16, &h, &back, 1);
    CHECK(brisk::f32_to_bits(back) == static_cast<uint32_t>(c.h) << 16);
  }
  // NaN stays NaN (quiet), keeping its sign.
  const uint16_t nan_bf = brisk::f32_to_bf16(brisk::bits_to_f32(0xFF800001u));
  CHECK((nan_bf & 0x7F80) == 0x7F80);
  CHECK((nan_bf & 0x007F) != 0);
  CHECK((nan_bf & 0x8000) != 0);
}
