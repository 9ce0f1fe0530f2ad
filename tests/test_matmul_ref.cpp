// SPDX-License-Identifier: MIT
// The scalar reference matrix kernels: the matmul.h contract (strides, tile
// shape, nothing written outside the tile), agreement with an exact dot of
// the decoded operands, and closeness to the unquantized float result.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/fp16.h"
#include "kernels/isa_tables.h"
#include "kernels/matmul.h"
#include "quant/blocks.h"
#include "quant/quant.h"
#include "quant_test_util.h"

using brisk::TensorType;
using brisk::kernels::MatmulKernel;
using brisk::test::gaussian;

namespace {

struct TypeCase {
  TensorType weight;
  TensorType act;
  double rel_err;  // typical relative error of the quantized dot (both operands)
};

const TypeCase kCases[] = {
    {TensorType::F32, TensorType::F32, 1e-6},   {TensorType::F16, TensorType::F32, 5e-4},
    {TensorType::BF16, TensorType::F32, 4e-3},  {TensorType::Q8_0, TensorType::Q8_0, 0.01},
    {TensorType::Q4_0, TensorType::Q8_0, 0.1},  {TensorType::Q4_1, TensorType::Q8_1, 0.1},
    {TensorType::Q4_K, TensorType::Q8_K, 0.08}, {TensorType::Q5_K, TensorType::Q8_K, 0.045},
    {TensorType::Q6_K, TensorType::Q8_K, 0.025},
};

// Rounding the Q8_1 sum field s to half precision (from the unrounded d)
// makes Q4_1's min term differ from m * sum(decoded activations) by up to
// two half-precision roundings; everything else in the kernel is exact
// integer arithmetic plus float scaling.
double q4_1_min_term_slack(const uint8_t* w, const uint8_t* a, int64_t k) {
  const auto* wb = reinterpret_cast<const brisk::quant::BlockQ4_1*>(w);
  const auto* ab = reinterpret_cast<const brisk::quant::BlockQ8_1*>(a);
  double slack = 0;
  for (int64_t b = 0; b < k / 32; ++b) {
    int sum = 0;
    for (int j = 0; j < 32; ++j) sum += ab[b].qs[j];
    slack += std::fabs(brisk::fp16_to_f32(wb[b].m)) * std::fabs(sum) *
             brisk::fp16_to_f32(ab[b].d) * std::ldexp(1.0, -9);
  }
  return slack;
}

}  // namespace

TEST_CASE("ref kernel table: act types, and nullptr for types without kernels", "[quant]") {
  for (const TypeCase& tc : kCases) {
    const MatmulKernel* k = brisk::kernels::ref_matmul_kernel(tc.weight);
    REQUIRE(k != nullptr);
    CHECK(k->act_type == tc.act);
    CHECK(brisk::kernels::matmul_kernel_for(tc.weight, brisk::kernels::Isa::scalar) == k);
  }
  for (TensorType t : {TensorType::Q5_0, TensorType::Q5_1, TensorType::Q8_1, TensorType::Q8_K,
                       TensorType::Q2_K, TensorType::Q3_K, TensorType::I8, TensorType::F64}) {
    CHECK(brisk::kernels::ref_matmul_kernel(t) == nullptr);
  }
  CHECK_THROWS(brisk::kernels::matmul_kernel(TensorType::Q5_0));
}

TEST_CASE("ref gemm matches exact dots of decoded operands and the float dot", "[quant]") {
  for (const TypeCase& tc : kCases) {
    const MatmulKernel& kern = *brisk::kernels::ref_matmul_kernel(tc.weight);
    const bool k_quant = brisk::type_traits(tc.weight).block_size == 256;
    for (int64_t k : k_quant ? std::vector<int64_t>{256, 512} : std::vector<int64_t>{96, 512}) {
      for (int nrows : {1, 7, 13}) {
        for (int ncols : {1, 3, 8, 17}) {
          INFO(brisk::type_name(tc.weight) << " k=" << k << " rows=" << nrows
                                           << " cols=" << ncols);
          // Padded strides everywhere, to catch any use of packed sizes.
          const size_t w_bytes = brisk::row_bytes(tc.weight, k);
          const size_t a_bytes = brisk::row_bytes(tc.act, k);
          const size_t w_stride = w_bytes + 8, act_stride = a_bytes + 8;
          const size_t out_stride = static_cast<size_t>(nrows) + 3;

          const std::vector<float> wf = gaussian(size_t(nrows) * k, 100 + nrows, 0.05f);
          const std::vector<float> xf = gaussian(size_t(ncols) * k, 200 + ncols, 2.f);
          std::vector<uint8_t> w(w_stride * nrows), act(act_stride * ncols);
          for (int r = 0; r < nrows; ++r)
            brisk::quant::quantize_row(tc.weight, wf.data() + r * k, w.data() + r * w_stride, k);
          for (int c = 0; c < ncols; ++c) {
            kern.quantize_act(xf.data() + c * k, act.data() + c * act_stride, k);
            // quantize_act is the act type's plain encoder.
            std::vector<uint8_t> again(a_bytes);
            brisk::quant::quantize_row(tc.act, xf.data() + c * k, again.data(), k);
            REQUIRE(std::memcmp(again.data(), act.data() + c * act_stride, a_bytes) == 0);
          }

          const float sentinel = std::numeric_limits<float>::quiet_NaN();
          std::vector<float> out(out_stride * ncols, sentinel);
          kern.gemm(k, w.data(), w_stride, nrows, act.data(), act_stride, ncols, out.data(),
                    out_stride);

          std::vector<float> wd(k), ad(k);
          for (int c = 0; c < ncols; ++c) {
            brisk::quant::dequantize_row(tc.act, act.data() + c * act_stride, ad.data(), k);
            for (int r = 0; r < nrows; ++r) {
              brisk::quant::dequantize_row(tc.weight, w.data() + r * w_stride, wd.data(), k);
              double exact = 0, abs_sum = 0, fdot = 0, wn = 0, xn = 0;
              for (int64_t i = 0; i < k; ++i) {
                exact += double(wd[i]) * ad[i];
                abs_sum += std::fabs(double(wd[i]) * ad[i]);
                const double wi = wf[r * k + i], xi = xf[c * k + i];
                fdot += wi * xi;
                wn += wi * wi;
                xn += xi * xi;
              }
              const double got = out[c * out_stride + r];
              INFO("r=" << r << " c=" << c << " got " << got << " exact " << exact << " float "
                        << fdot);
              // Tight: only float rounding of per-block scaling and summation.
              double tight = 2e-6 * abs_sum + 1e-30;  // observed <= 2e-7
              if (tc.weight == TensorType::Q4_1)
                tight += q4_1_min_term_slack(w.data() + r * w_stride, act.data() + c * act_stride,
                                             k);
              REQUIRE(std::fabs(got - exact) <= tight);
              // Loose: six standard deviations of the quantization noise.
              const double loose = 6 * tc.rel_err * std::sqrt(wn * xn / double(k));
              REQUIRE(std::fabs(got - fdot) <= loose);
            }
          }
          // Nothing outside the tile was written.
          for (int c = 0; c < ncols; ++c)
            for (size_t r = nrows; r < out_stride; ++r) REQUIRE(std::isnan(out[c * out_stride + r]));
        }
      }
    }
  }
}

TEST_CASE("ref gemm handles zero activations and zero weights", "[quant]") {
  for (const TypeCase& tc : kCases) {
    const MatmulKernel& kern = *brisk::kernels::ref_matmul_kernel(tc.weight);
    const int64_t k = 256;
    std::vector<float> wf = gaussian(k, 1), zeros(k, 0.f);
    std::vector<uint8_t> w(brisk::row_bytes(tc.weight, k)), wz(w.size());
    std::vector<uint8_t> a(brisk::row_bytes(tc.act, k)), az(a.size());
    brisk::quant::quantize_row(tc.weight, wf.data(), w.data(), k);
    brisk::quant::quantize_row(tc.weight, zeros.data(), wz.data(), k);
    kern.quantize_act(wf.data(), a.data(), k);
    kern.quantize_act(zeros.data(), az.data(), k);
    float out = 1.f;
    kern.gemm(k, w.data(), w.size(), 1, az.data(), az.size(), 1, &out, 1);
    CHECK(out == 0.f);
    kern.gemm(k, wz.data(), wz.size(), 1, a.data(), a.size(), 1, &out, 1);
    CHECK(out == 0.f);
  }
}
