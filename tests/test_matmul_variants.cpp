// SPDX-License-Identifier: MIT
// Every named kernel variant this machine can run (kernels/variants.h)
// against the scalar reference of its layout: the planner may pick any of
// them for any column count in its [min_cols, max_cols], so each must be
// right for all of those, on pieces of a matrix as the matmul passes cut them
// (model/matmul_op.cpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/cpu.h"
#include "core/tensor_type.h"
#include "kernels/matmul.h"
#include "kernels/packed.h"
#include "kernels/variants.h"
#include "quant/quant.h"

using namespace brisk;
using namespace brisk::kernels;

namespace {

const TensorType kTypes[] = {TensorType::F32,  TensorType::F16,  TensorType::BF16,
                             TensorType::Q8_0, TensorType::Q4_0, TensorType::Q4_1,
                             TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K};
const int kCols[] = {1, 2, 3, 4, 5, 7, 8, 16, 31, 32, 33, 64};

// Several blocks (an odd count: Q4_0/Q8_0 pad their last pair) or
// super-blocks per row.
int64_t k_for(TensorType t) { return type_traits(t).block_size == 256 ? 768 : 416; }

// 22 row groups, the last one partial, cut into pieces of 15, 3 and 4 groups
// (the matmul passes hand kernels up to 16 groups; odd counts leave a group
// over for kernels that read groups in pairs, 15 and 3 leave three over for
// those that read four at once, and the last piece puts the partial group
// inside a tile of two or four).
constexpr int kRows = 21 * kPackRows + 5;
const int kPieceGroups[] = {15, 3, 4};

// Runs `kern` over rows [0, kRows) piece by piece. w is the first row
// (row-major, stride row bytes) or the first group (packed, stride group bytes).
void gemm_in_pieces(const MatmulKernel& kern, int64_t k, const uint8_t* w, size_t stride, const uint8_t* act,
                    size_t act_stride, int ncols, float* out, size_t out_stride) {
  int g = 0;
  for (int n : kPieceGroups) {
    const int r0 = g * kPackRows, nr = std::min(kRows, (g + n) * kPackRows) - r0;
    const uint8_t* first = w + static_cast<size_t>(kern.packed ? g : r0) * stride;
    kern.gemm(k, first, stride, nr, act, act_stride, ncols, out + r0, out_stride);
    g += n;
  }
  REQUIRE(g * kPackRows >= kRows);
}

struct Problem {
  TensorType t;
  int64_t k;
  size_t row_bytes;
  std::vector<uint8_t> rows;     // kRows GGUF rows
  std::vector<uint8_t> packed;   // the same, packed (where packable)
  size_t group_bytes = 0;
  std::vector<float> wf;         // the weights' values, for error bounds
};

Problem make_problem(TensorType t, std::mt19937& rng) {
  Problem p{t, k_for(t), row_bytes(t, k_for(t)), {}, {}, 0, {}};
  std::normal_distribution<float> nd(0, 1);
  std::vector<float> x(p.k);
  p.rows.assign(p.row_bytes * kRows, 0);
  p.wf.resize(static_cast<size_t>(p.k) * kRows);
  for (int r = 0; r < kRows; ++r) {
    for (auto& v : x) v = nd(rng);
    quant::quantize_row(t, x.data(), p.rows.data() + r * p.row_bytes, p.k);
    quant::dequantize_row(t, p.rows.data() + r * p.row_bytes, p.wf.data() + static_cast<size_t>(r) * p.k, p.k);
  }
  if (packable(t, p.k)) {
    p.group_bytes = packed_group_bytes(t, p.k);
    const int ng = (kRows + kPackRows - 1) / kPackRows;
    p.packed.assign(p.group_bytes * ng + 64, 0xCD);
    for (int g = 0; g < ng; ++g)
      pack_row_group(t, p.rows.data() + static_cast<size_t>(g) * kPackRows * p.row_bytes, p.row_bytes,
                     std::min(kPackRows, kRows - g * kPackRows), p.k, p.packed.data() + p.group_bytes * g);
  }
  return p;
}

// The product of `kern` with ncols columns x (k floats each), its weights
// given as packed or row-major by kern.packed. Rows past kRows stay `fill`.
std::vector<float> product(const MatmulKernel& kern, const Problem& p, const std::vector<float>& x, int ncols,
                           size_t out_stride, float fill) {
  const size_t ab = act_column_bytes(kern, p.k);
  std::vector<uint8_t> act(ab * ncols + 64, 0xEE);
  for (int c = 0; c < ncols; ++c) kern.quantize_act(x.data() + c * p.k, act.data() + c * ab, p.k);
  std::vector<float> out(out_stride * ncols, fill);
  if (kern.packed) {
    gemm_in_pieces(kern, p.k, p.packed.data(), p.group_bytes, act.data(), ab, ncols, out.data(), out_stride);
  } else {
    gemm_in_pieces(kern, p.k, p.rows.data(), p.row_bytes, act.data(), ab, ncols, out.data(), out_stride);
  }
  return out;
}

// How far a variant may be from the scalar reference, per unit of
// sum |w_i x_i|: float sums in another order for the same activation
// format (as test_matmul_simd); bf16-based formats round products to bf16
// on their batch paths (the reference does too, as test_packed_float checks);
// an activation format other than the reference's (e.g. bf16 activations
// against Q8 ones) differs by its own rounding, ~2^-8 per product.
// AMX variants round both factors to bf16 from kAmxMinCols columns on,
// where the reference may still multiply exactly.
// The scalar reference of the "I16" batch kernels of packed F16 / BF16.
const MatmulKernel* i16_reference(TensorType t) {
  static const MatmulKernel f16{TensorType::I16, quantize_packed_i16_act_ref, gemm_f16_packed_i16_ref,
                                packed_i16_act_bytes, true};
  static const MatmulKernel bf16{TensorType::I16, quantize_packed_i16_act_ref, gemm_bf16_packed_i16_ref,
                                 packed_i16_act_bytes, true};
  return t == TensorType::F16 ? &f16 : t == TensorType::BF16 ? &bf16 : nullptr;
}

double relative_tolerance(const KernelVariant& v, const MatmulKernel& ref) {
  const MatmulKernel& kern = *v.kernel;
  if (kern.act_type != ref.act_type) return 1e-2;
  if (v.isa == Isa::amx) return 1.0 / 256;
  if (kern.act_type == TensorType::BF16) return 1e-5;
  return 6e-6;
}

}  // namespace

TEST_CASE("variant names are unique and find_variant finds each", "[variants]") {
  for (TensorType t : kTypes) {
    const std::vector<KernelVariant> vs = matmul_variants(t);
    INFO(type_name(t));
    REQUIRE(!vs.empty());
    std::set<std::string> names;
    for (const KernelVariant& v : vs) {
      INFO(v.name);
      REQUIRE(v.name != nullptr);
      REQUIRE(v.kernel != nullptr);
      REQUIRE(v.packed == v.kernel->packed);
      REQUIRE(v.min_cols >= 1);
      REQUIRE(v.min_cols <= v.max_cols);
      REQUIRE(names.insert(v.name).second);
      REQUIRE(find_variant(vs, v.name) == &v);
      REQUIRE(std::string(v.name).find(type_name(t)) != std::string::npos);
    }
    REQUIRE(find_variant(vs, "no.such.variant") == nullptr);
  }
}

TEST_CASE("every variant matches the scalar reference of its layout", "[variants]") {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0, 1);
  const size_t out_stride = kRows + 3;
  const float sentinel = -12345.0f;
  for (TensorType t : kTypes) {
    const Problem p = make_problem(t, rng);
    const std::vector<KernelVariant> vs = matmul_variants(t);
    for (int ncols : kCols) {
      std::vector<float> x(static_cast<size_t>(p.k) * ncols);
      for (auto& e : x) e = nd(rng);
      // sum |w_i x_i| per output, the scale of its rounding errors.
      std::vector<double> mag(out_stride * ncols, 0);
      for (int c = 0; c < ncols; ++c)
        for (int r = 0; r < kRows; ++r)
          for (int64_t i = 0; i < p.k; ++i)
            mag[c * out_stride + r] += std::fabs(static_cast<double>(p.wf[static_cast<size_t>(r) * p.k + i]) * x[c * p.k + i]);
      std::vector<float> want[3];  // row-major, packed reference, packed "I16" reference
      for (const KernelVariant& v : vs) {
        if (ncols < v.min_cols || ncols > v.max_cols) continue;
        const bool i16 = v.kernel->act_type == TensorType::I16;
        const MatmulKernel* ref = i16        ? i16_reference(t)
                                  : v.packed ? packed_matmul_kernel_for(t, Isa::scalar)
                                             : matmul_kernel_for(t, Isa::scalar);
        INFO(v.name << " ncols=" << ncols);
        REQUIRE(ref != nullptr);
        REQUIRE((!v.packed || !p.packed.empty()));
        std::vector<float>& w = want[i16 ? 2 : v.packed ? 1 : 0];
        if (w.empty()) w = product(*ref, p, x, ncols, out_stride, sentinel);
        const std::vector<float> got = product(*v.kernel, p, x, ncols, out_stride, sentinel);
        const double rel = relative_tolerance(v, *ref);
        // The first output out of bounds, if any (one REQUIRE per case: fast).
        long bad = -1;
        for (size_t i = 0; i < got.size() && bad < 0; ++i) {
          const bool past_rows = i % out_stride >= static_cast<size_t>(kRows);
          const bool ok = past_rows ? got[i] == sentinel
                                    : std::fabs(static_cast<double>(got[i]) - w[i]) <=
                                          rel * mag[i] + 4e-7 * std::fabs(w[i]) + 1e-30;
          if (!ok) bad = static_cast<long>(i);
        }
        if (bad >= 0)
          FAIL("row " << bad % out_stride << " column " << bad / out_stride << ": got " << got[bad] << ", reference "
                      << w[bad] << ", sum |w x| " << mag[bad]);
      }
    }
  }
}

TEST_CASE("the AVX-VNNI variants are listed exactly where the CPU has AVX-VNNI", "[variants]") {
  // The AVX2-level kernels run under BRISK_ISA=avx2 and above; on a CPU
  // without AVX-VNNI they must not be offered at all (they would fault).
  if (!isa_supported(Isa::avx2) || static_cast<int>(active_isa()) < static_cast<int>(Isa::avx2)) {
    WARN("skipped: the AVX2 kernels are not active here");
    return;
  }
  const bool vnni = cpu_features().avx_vnni;
  if (!vnni) WARN("this CPU lacks AVX-VNNI: checking that no .vnni variant is offered");
  for (TensorType t : {TensorType::Q4_0, TensorType::Q8_0, TensorType::Q4_K}) {
    const std::string name = std::string("avx2.packed.") + type_name(t) + ".vnni";
    INFO(name);
    const std::vector<KernelVariant> vs = matmul_variants(t);
    const KernelVariant* v = find_variant(vs, name.c_str());
    CHECK((v != nullptr) == vnni);
    if (v) {
      CHECK(v->isa == Isa::avx2);
      CHECK(v->packed);
      CHECK(v->max_cols == INT_MAX);  // every column class, as the planner may pick it for any
    }
  }
}
