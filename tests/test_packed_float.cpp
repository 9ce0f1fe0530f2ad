// SPDX-License-Identifier: MIT
// Packed F16 / BF16 weights (kernels/packed.h): the layout round trip, the
// "F32 + BF16" activation columns, and the scalar, AVX2 and AVX-512 gemms
// against a double-precision reference. Kernels with "F32 + BF16"
// activations multiply exactly below kPackedFloatBatchCols columns and
// round both factors to bf16 from it on; the AVX2 ones (plain f32
// activations) are exact at every column count. The "I16" batch form: its
// activation columns, and its reference against the exact product.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/fp16.h"
#include "core/tensor_type.h"
#include "kernels/matmul.h"
#include "kernels/packed.h"
#include "kernels/variants.h"

using namespace brisk;
using namespace brisk::kernels;

namespace {

const TensorType kTypes[] = {TensorType::F16, TensorType::BF16};

uint16_t to_bits(TensorType t, float v) { return t == TensorType::F16 ? f32_to_fp16(v) : f32_to_bf16(v); }
float from_bits(TensorType t, uint16_t h) { return t == TensorType::F16 ? fp16_to_f32(h) : bf16_to_f32(h); }

// Rows of k 2-byte values: normal, or (edge) with a wide range of exponents,
// exact zeros and F16 subnormals.
std::vector<uint16_t> make_rows(std::mt19937& rng, TensorType t, int nrows, int64_t k, bool edge) {
  std::normal_distribution<float> nd(0, 1);
  std::vector<uint16_t> w(static_cast<size_t>(nrows) * k);
  for (auto& h : w) {
    float v = nd(rng);
    if (edge) {
      switch (rng() % 8) {
        case 0: v = 0; break;
        case 1: v = std::ldexp(v, -20); break;  // an F16 subnormal
        case 2: v = std::ldexp(v, static_cast<int>(rng() % 20) - 10); break;
        default: break;
      }
    }
    h = to_bits(t, v);
  }
  return w;
}

std::vector<float> make_act(std::mt19937& rng, int64_t k, bool edge) {
  std::normal_distribution<float> nd(0, 1);
  std::vector<float> x(k);
  for (auto& v : x) {
    v = nd(rng);
    if (edge && rng() % 8 == 0) v = rng() % 2 ? 0.0f : v * 1e4f;
  }
  return x;
}

void check(const MatmulKernel& kern, TensorType t, std::mt19937& rng, int64_t k, int nrows, int ncols, bool edge) {
  const std::vector<uint16_t> w = make_rows(rng, t, nrows, k, edge);
  const size_t gb = packed_group_bytes(t, k);
  const int ng = (nrows + kPackRows - 1) / kPackRows;
  std::vector<uint8_t> p(gb * ng + 64, 0xCD);
  for (int g = 0; g < ng; ++g)
    pack_row_group(t, reinterpret_cast<const uint8_t*>(w.data() + static_cast<size_t>(g) * kPackRows * k), 2 * k,
                   std::min(kPackRows, nrows - g * kPackRows), k, p.data() + gb * g);
  // A column stride that is not a multiple of 64 (edge): the kernels may not
  // rely on aligned columns.
  const size_t ab = act_column_bytes(kern, k) + (edge ? 4 : 0);
  std::vector<uint8_t> act(ab * ncols + 64, 0xEE);
  std::vector<std::vector<float>> xs;
  for (int c = 0; c < ncols; ++c) {
    xs.push_back(make_act(rng, k, edge));
    kern.quantize_act(xs.back().data(), act.data() + c * ab, k);
  }
  const size_t out_stride = nrows + 3;
  const float sentinel = -12345.0f;
  std::vector<float> out(out_stride * ncols, sentinel);
  kern.gemm(k, p.data(), gb, nrows, act.data(), ab, ncols, out.data(), out_stride);
  const bool batch = ncols >= kPackedFloatBatchCols && kern.act_type == TensorType::BF16;
  for (int c = 0; c < ncols; ++c) {
    for (int r = 0; r < nrows; ++r) {
      double exp = 0, mag = 0;
      for (int64_t i = 0; i < k; ++i) {
        const float wv = from_bits(t, w[static_cast<size_t>(r) * k + i]);
        const double prod = batch ? static_cast<double>(bf16_to_f32(bf16_batch_round(wv))) *
                                        bf16_to_f32(bf16_batch_round(xs[c][i]))
                                  : static_cast<double>(wv) * xs[c][i];
        exp += prod;
        mag += std::fabs(prod);
      }
      INFO(type_name(t) << " k=" << k << " rows=" << nrows << " cols=" << ncols << " r=" << r << " c=" << c
                        << " edge=" << edge);
      // f32 sums in some order: a few ulps of the magnitude. The other path
      // (bf16 instead of exact, or the reverse) is off by ~1e-4 of it.
      REQUIRE(std::fabs(out[c * out_stride + r] - exp) <= 1e-5 * mag + 1e-30);
    }
    for (size_t r = nrows; r < out_stride; ++r) REQUIRE(out[c * out_stride + r] == sentinel);
  }
}

}  // namespace

TEST_CASE("packed F16/BF16 layout: pack then unpack gives the rows back", "[packed][float]") {
  std::mt19937 rng(3);
  for (TensorType t : kTypes) {
    REQUIRE(packable(t));
    REQUIRE(packable(t, 64));
    REQUIRE_FALSE(packable(t, 63));  // pairs need an even row length
    REQUIRE(packed_group_bytes(t, 2048) == row_bytes(t, 2048) * kPackRows);
    for (int64_t k : {2, 64, 2050})
      for (int nrows : {1, 15, 16}) {
        const std::vector<uint16_t> w = make_rows(rng, t, nrows, k, true);
        std::vector<uint8_t> grp(packed_group_bytes(t, k), 0xAB);
        pack_row_group(t, reinterpret_cast<const uint8_t*>(w.data()), 2 * k, nrows, k, grp.data());
        std::vector<uint16_t> back(w.size(), 0);
        unpack_row_group(t, grp.data(), nrows, k, reinterpret_cast<uint8_t*>(back.data()), 2 * k);
        REQUIRE(back == w);
        // Rows past nrows are zero.
        for (int r = nrows; r < kPackRows; ++r)
          for (int64_t i = 0; i < k; ++i) REQUIRE(grp[64 * (i / 2) + 4 * r + 2 * (i % 2)] == 0);
      }
  }
}

TEST_CASE("packed F16/BF16 activations: f32 copy and bf16 rounding", "[packed][float]") {
  CHECK(bf16_batch_round(1.0f) == 0x3F80);
  CHECK(bf16_batch_round(1.00390625f) == 0x3F80);  // halfway: to even
  CHECK(bf16_batch_round(1.01171875f) == 0x3F82);  // halfway: to even (up)
  CHECK(bf16_batch_round(1e-40f) == 0x0000);       // subnormal reads as zero
  CHECK(bf16_batch_round(-1e-40f) == 0x8000);
  std::mt19937 rng(4);
  for (Isa isa : {Isa::scalar, Isa::avx512}) {
    for (TensorType t : kTypes) {
      const MatmulKernel* kern = packed_matmul_kernel_for(t, isa);
      if (!kern) {
        WARN("no packed " << type_name(t) << " kernel on " << isa_name(isa));
        continue;
      }
      for (int64_t k : {2, 30, 2048}) {
        std::vector<float> x = make_act(rng, k, true);
        x[0] = 1e-40f;
        std::vector<uint8_t> a(act_column_bytes(*kern, k), 0), b(packed_float_act_bytes(k), 0);
        kern->quantize_act(x.data(), a.data(), k);
        quantize_packed_float_act_ref(x.data(), b.data(), k);
        REQUIRE(a == b);
        REQUIRE(std::memcmp(a.data(), x.data(), 4 * k) == 0);
      }
    }
  }
}

TEST_CASE("packed F16/BF16 gemm (scalar and simd) matches the reference", "[simd][packed][float]") {
  // 50, 80 and 100 rows: groups read 4, then 2, then 1 at a time; 1-2, 3-4
  // and 5+ columns take those three paths.
  const int rows[] = {1, 5, 16, 17, 33, 48, 50, 80, 100, 150};  // 150: runs of 2 in 4 streams, then 2
  const int cols[] = {1, 2, 3, 4, 5, 8, 9, 31, 32, 33, 45};
  for (TensorType t : kTypes) {
    for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
      if (!isa_supported(isa)) {
        WARN("skipped: CPU lacks " << isa_name(isa));
        continue;
      }
      const MatmulKernel* kern = packed_matmul_kernel_for(t, isa);
      if (!kern) {
        WARN("skipped: no packed " << type_name(t) << " kernel on " << isa_name(isa) << " (AVX-512 BF16 missing)");
        continue;
      }
      REQUIRE(kern->packed);
      std::mt19937 rng(static_cast<uint32_t>(t) * 7 + static_cast<uint32_t>(isa));
      const int64_t ks[] = {2, 32, 98, 2048};
      int n = 0;
      for (int nr : rows)
        for (int nc : cols) {
          check(*kern, t, rng, ks[n % 4], nr, nc, n % 3 == 2);
          ++n;
        }
    }
  }
}

TEST_CASE("packed F16/BF16 I16 activations: every kernel's columns are the reference's bytes", "[packed][float]") {
  std::mt19937 rng(5);
  int checked = 0;
  for (TensorType t : kTypes)
    for (const KernelVariant& v : matmul_variants(t)) {
      if (v.kernel->act_type != TensorType::I16) continue;
      INFO(v.name);
      for (int64_t k : {2, 32, 98, 416, 2048}) {
        for (bool edge : {false, true}) {
          std::vector<float> x = make_act(rng, k, edge);
          if (edge && k >= 64) std::fill(x.begin() + 32, x.begin() + 64, 0.0f);  // an all-zero block
          const size_t n = packed_i16_act_bytes(k);
          REQUIRE(act_column_bytes(*v.kernel, k) == n);
          std::vector<uint8_t> want(n, 0xAB), got(n, 0xAB);
          quantize_packed_i16_act_ref(x.data(), want.data(), k);
          v.kernel->quantize_act(x.data(), got.data(), k);
          // The scales and the values (the padding between them is free).
          const size_t nb = static_cast<size_t>(i16_blocks(k)), off = packed_i16_act_offset(k);
          REQUIRE(std::memcmp(want.data(), got.data(), 4 * nb) == 0);
          REQUIRE(std::memcmp(want.data() + off, got.data() + off, n - off) == 0);
          ++checked;
        }
      }
    }
  if (checked == 0) WARN("skipped: no .i16 variant on this CPU (AVX2 missing)");
}

TEST_CASE("packed F16/BF16 I16 reference: within its documented error of the exact product", "[packed][float]") {
  // Per block of 32: weights to int16 (error <= max|w| / 65534 each),
  // activations to 12 bits (<= max|x| / 4094 each); f32 sums on top.
  std::mt19937 rng(9);
  for (TensorType t : kTypes)
    for (int64_t k : {2, 98, 416, 2048})
      for (bool edge : {false, true}) {
        const int nrows = 21, ncols = 3;
        const std::vector<uint16_t> w = make_rows(rng, t, nrows, k, edge);
        const size_t gb = packed_group_bytes(t, k);
        const int ng = (nrows + kPackRows - 1) / kPackRows;
        std::vector<uint8_t> p(gb * ng, 0);
        for (int g = 0; g < ng; ++g)
          pack_row_group(t, reinterpret_cast<const uint8_t*>(w.data() + static_cast<size_t>(g) * kPackRows * k), 2 * k,
                         std::min(kPackRows, nrows - g * kPackRows), k, p.data() + gb * g);
        const size_t ab = packed_i16_act_bytes(k);
        std::vector<uint8_t> act(ab * ncols);
        std::vector<std::vector<float>> xs;
        for (int c = 0; c < ncols; ++c) {
          xs.push_back(make_act(rng, k, edge));
          quantize_packed_i16_act_ref(xs.back().data(), act.data() + c * ab, k);
        }
        std::vector<float> out(static_cast<size_t>(nrows) * ncols);
        (t == TensorType::F16 ? gemm_f16_packed_i16_ref : gemm_bf16_packed_i16_ref)(k, p.data(), gb, nrows, act.data(),
                                                                                     ab, ncols, out.data(), nrows);
        for (int c = 0; c < ncols; ++c)
          for (int r = 0; r < nrows; ++r) {
            double exact = 0, bound = 0, mag = 0;
            for (int64_t b0 = 0; b0 < k; b0 += 32) {
              double mw = 0, mx = 0;
              for (int64_t i = b0; i < std::min<int64_t>(k, b0 + 32); ++i) {
                mw = std::max(mw, std::fabs(static_cast<double>(from_bits(t, w[static_cast<size_t>(r) * k + i]))));
                mx = std::max(mx, std::fabs(static_cast<double>(xs[c][i])));
              }
              for (int64_t i = b0; i < std::min<int64_t>(k, b0 + 32); ++i) {
                const double wv = from_bits(t, w[static_cast<size_t>(r) * k + i]), xv = xs[c][i];
                exact += wv * xv;
                mag += std::fabs(wv * xv);
                bound += (std::fabs(wv) + mw / 65534) * mx / 4094 + std::fabs(xv) * mw / 65534;
              }
            }
            INFO(type_name(t) << " k=" << k << " edge=" << edge << " r=" << r << " c=" << c);
            REQUIRE(std::fabs(out[static_cast<size_t>(c) * nrows + r] - exact) <= bound + 1e-5 * mag + 1e-30);
          }
      }
}
