// SPDX-License-Identifier: MIT
// The AMX packed tables (kernels/amx/): from kAmxMinCols columns tile products of
// bf16-rounded weights and activations, below that the AVX-512 packed
// kernels. Held to a double-precision product of the dequantized weights and
// the f32 activations (within bf16 rounding), and below the threshold to the
// AVX-512 kernel's exact results.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/cpu.h"
#include "core/fp16.h"
#include "core/tensor_type.h"
#include "kernels/matmul.h"
#include "kernels/packed.h"
#include "engine/session.h"
#include "kernels/variants.h"
#include "model/model.h"
#include "quant/quant.h"
#include "test_data.h"

#if defined(BRISK_HAVE_AMX_MODEL)
#include "kernels/amx/tile_model.h"
#endif

using namespace brisk;
using namespace brisk::kernels;

namespace {

const TensorType kTypes[] = {TensorType::Q4_0, TensorType::Q8_0, TensorType::Q4_K,
                             TensorType::Q6_K, TensorType::F16,  TensorType::BF16};

struct Matrix {
  std::vector<uint8_t> packed;
  size_t group_bytes = 0;
  std::vector<float> values;  // the weights as the file means them, row-major
};

Matrix make_matrix(std::mt19937& rng, TensorType t, int nrows, int64_t k) {
  std::normal_distribution<float> nd(0, 1);
  const size_t rb = row_bytes(t, k);
  std::vector<uint8_t> rows(rb * nrows);
  std::vector<float> x(k);
  for (int r = 0; r < nrows; ++r) {
    for (auto& v : x) v = nd(rng) * (1.0f + static_cast<float>(r % 5));
    uint8_t* dst = rows.data() + rb * r;
    if (t == TensorType::F16) {
      for (int64_t i = 0; i < k; ++i) {
        const uint16_t h = f32_to_fp16(x[i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
    } else if (t == TensorType::BF16) {
      for (int64_t i = 0; i < k; ++i) {
        const uint16_t h = f32_to_bf16(x[i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
    } else {
      quant::quantize_row(t, x.data(), dst, k);
    }
  }
  Matrix m;
  m.group_bytes = packed_group_bytes(t, k);
  const int ng = (nrows + kPackRows - 1) / kPackRows;
  m.packed.assign(m.group_bytes * ng, 0xCD);
  for (int g = 0; g < ng; ++g)
    pack_row_group(t, rows.data() + rb * kPackRows * g, rb, std::min(kPackRows, nrows - g * kPackRows), k,
                   m.packed.data() + m.group_bytes * g);
  m.values.resize(static_cast<size_t>(nrows) * k);
  for (int r = 0; r < nrows; ++r) quant::dequantize_row(t, rows.data() + rb * r, m.values.data() + r * k, k);
  return m;
}

// Runs kern over all columns; stride padded by `pad` bytes (unaligned columns).
std::vector<float> run(const MatmulKernel& kern, const Matrix& m, const std::vector<std::vector<float>>& xs,
                       int nrows, int64_t k, size_t out_stride, size_t pad) {
  const int ncols = static_cast<int>(xs.size());
  const size_t ab = act_column_bytes(kern, k) + pad;
  // Exactly ncols columns, no slack: the tail panel must come from padded
  // scratch, not from tile loads past the last column.
  std::vector<uint8_t> act(ab * ncols);
  for (int c = 0; c < ncols; ++c) kern.quantize_act(xs[c].data(), act.data() + c * ab, k);
  std::vector<float> out(out_stride * ncols, -12345.0f);
  kern.gemm(k, m.packed.data(), m.group_bytes, nrows, act.data(), ab, ncols, out.data(), out_stride);
  return out;
}

// amx: the AMX table of type t under test (the hardware's or the model's).
void check(const MatmulKernel* amx, TensorType t, std::mt19937& rng, int64_t k, int nrows, int ncols) {
  const MatmulKernel* vnni = packed_matmul_kernel_for(t, Isa::avx512);
  REQUIRE(amx != nullptr);
  REQUIRE(amx->packed);
  const Matrix m = make_matrix(rng, t, nrows, k);
  std::normal_distribution<float> nd(0, 1);
  std::vector<std::vector<float>> xs(ncols, std::vector<float>(k));
  for (auto& x : xs)
    for (auto& v : x) v = nd(rng);
  const size_t out_stride = nrows + 3;
  const size_t pad = ncols % 2 ? 4 : 0;
  const std::vector<float> out = run(*amx, m, xs, nrows, k, out_stride, pad);
  const bool tiles = ncols >= kAmxMinCols && k % 32 == 0;
  std::vector<float> same;
  if (!tiles) same = run(*vnni, m, xs, nrows, k, out_stride, 0);
  for (int c = 0; c < ncols; ++c) {
    for (int r = 0; r < nrows; ++r) {
      double exact = 0, mag = 0;
      for (int64_t i = 0; i < k; ++i) {
        const double p = static_cast<double>(m.values[r * k + i]) * xs[c][i];
        exact += p;
        mag += std::fabs(p);
      }
      const float got = out[c * out_stride + r];
      INFO(type_name(t) << " k=" << k << " rows=" << nrows << " cols=" << ncols << " r=" << r << " c=" << c);
      if (tiles) {
        // Each factor rounded to bf16 (2^-9 relative), f32 sums.
        REQUIRE(std::fabs(got - exact) <= 0x1p-8 * mag + 1e-30);
      } else {
        REQUIRE(got == same[c * out_stride + r]);  // the AVX-512 kernel itself
      }
    }
    for (size_t r = nrows; r < out_stride; ++r) REQUIRE(out[c * out_stride + r] == -12345.0f);
  }
}

// Every type over shapes that take each path: below kAmxMinCols, whole and
// partial 32-column panels, whole and partial row groups, odd and even
// chunks of groups. table(t) gives the AMX table under test.
template <class Table>
void check_all_types(Table table) {
  const int cols[] = {1, 2, 15, 16, 17, kAmxMinCols - 1, kAmxMinCols, 31, 32, 33, 64, 100};
  const int rows[] = {16, 17, 40, 100};
  for (TensorType t : kTypes) {
    std::mt19937 rng(static_cast<uint32_t>(t) * 31 + 1);
    const bool k256 = t == TensorType::Q4_K || t == TensorType::Q6_K;
    const std::vector<int64_t> ks = k256 ? std::vector<int64_t>{256, 512, 5632}
                                         : std::vector<int64_t>{32, 96, 2048, 5632};
    int n = 0;
    for (int nc : cols)
      for (int nr : rows) {
        const int64_t k = ks[n++ % ks.size()];
        if (k == 5632 && nc > 33) continue;  // the double reference is slow
        check(table(t), t, rng, k, nr, nc);
      }
    // k not a multiple of 32 (F16/BF16): the AVX-512 kernel even for many columns.
    if (t == TensorType::F16 || t == TensorType::BF16) check(table(t), t, rng, 50, 33, 40);
  }
}

}  // namespace

TEST_CASE("AMX is offered only where the CPU and OS allow it", "[amx]") {
  const CpuFeatures& f = cpu_features();
  REQUIRE(isa_supported(Isa::amx) ==
          (simd_kernels_built() && f.avx512 && f.avx512_vnni && f.avx512_bf16 && f.amx_bf16));
  if (!isa_supported(Isa::amx)) {
    for (TensorType t : kTypes) REQUIRE(packed_matmul_kernel_for(t, Isa::amx) == nullptr);
    REQUIRE(static_cast<int>(active_isa()) < static_cast<int>(Isa::amx));
  }
  REQUIRE(std::string(isa_name(Isa::amx)) == "amx");
  // Below AMX (BRISK_ISA=avx512 or a CPU without it) no variant is an AMX one.
  for (TensorType t : kTypes)
    for (const KernelVariant& v : matmul_variants(t)) {
      REQUIRE(static_cast<int>(v.isa) <= static_cast<int>(active_isa()));
      if (active_isa() == Isa::amx && v.isa == Isa::amx) REQUIRE(std::string(v.name).rfind("amx.packed.", 0) == 0);
    }
}

TEST_CASE("AMX packed gemm matches the reference", "[amx][simd][packed]") {
  if (!isa_supported(Isa::amx)) {
    WARN("skipped: this CPU or OS does not allow AMX-BF16");
    return;
  }
  check_all_types([](TensorType t) { return packed_matmul_kernel_for(t, Isa::amx); });
}

#if defined(BRISK_HAVE_AMX_MODEL)
namespace {
// The model's build of the AMX file uses AVX-512 BF16 for everything but
// the tiles; false (with a warning) where this CPU lacks it.
bool model_runs_here() {
  if (isa_supported(Isa::avx512) && cpu_features().avx512_bf16) return true;
  WARN("skipped: the AMX kernels' model needs AVX-512 BF16, which this CPU lacks");
  return false;
}
}  // namespace

// The same kernels with the tile instructions run by the scalar model
// (kernels/amx/tile_model.h): their tiling, strides, tails and dequantized
// tiles checked on any CPU with AVX-512 BF16, AMX or not.
TEST_CASE("AMX packed gemm through the tile model matches the reference", "[amx][simd][packed]") {
  if (!model_runs_here()) return;
  const uint64_t before = amx_model::state().products;
  check_all_types([](TensorType t) {
    const MatmulKernel* k = amx_model::packed_matmul_kernel(t);
    REQUIRE(k != nullptr);
    return k;
  });
  // The tile paths ran (not only the AVX-512 fallback below kAmxMinCols),
  // and every call gave its tiles back.
  REQUIRE(amx_model::state().products > before);
  REQUIRE_FALSE(amx_model::state().configured);
}

// The engine's prompt passes through the AMX tables (tile model): the
// activation formats, column strides and fused passes that MatmulOp gives
// them, not only a lone gemm. Held to the default kernels' logits within
// bf16 rounding; a wrong layout gives unrelated logits.
TEST_CASE("a prompt through the AMX tables (tile model) gives the default kernels' logits", "[amx][model]") {
  if (!model_runs_here()) return;
  for (const char* name : {"logstories-q4_0.gguf", "logstories-q8_0.gguf", "logstories-q4_k_m.gguf",
                           "logstories-f16.gguf"}) {
    BRISK_TEST_FILE(path, std::string("models/logstories/") + name);
    INFO(name);
    const std::unique_ptr<Model> ref = Model::open(path, reproducible_load());
    const std::unique_ptr<Model> amx = Model::open(path, reproducible_load());
    // This test owns the second model: routing its prompt-class kernels by
    // hand is what a kernel plan does at load.
    Weights& w = const_cast<Weights&>(amx->weights());
    int routed = 0;
    auto route = [&](brisk::Matrix& m) {
      if (!m.packed) return;
      if (const MatmulKernel* k = amx_model::packed_matmul_kernel(m.type)) {
        m.kernels[static_cast<int>(ColClass::prompt)] = k;
        ++routed;
      }
    };
    for (LayerWeights& L : w.layers)
      for (brisk::Matrix* m : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) route(*m);
    route(w.output);
    REQUIRE(routed >= 7 * static_cast<int>(w.layers.size()));

    BRISK_TEST_FILE(f32_path, "models/logstories/logstories-f32.gguf");
    const std::unique_ptr<Model> exact = Model::open(f32_path, reproducible_load());
    const int n_vocab = ref->config().n_vocab;
    std::vector<int32_t> tokens(48);
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>((7 * i + 3) % n_vocab);
    SessionOptions so;
    so.n_ctx = 64;
    so.n_threads = 2;
    Session sr(*ref, so), sa(*amx, so), se(*exact, so);
    std::vector<float> lr(tokens.size() * n_vocab), la(tokens.size() * n_vocab), le(tokens.size() * n_vocab);
    se.eval(tokens.data(), tokens.size(), le.data());
    const uint64_t before = amx_model::state().products;
    sr.eval(tokens.data(), tokens.size(), lr.data());
    sa.eval(tokens.data(), tokens.size(), la.data());
    // Only this thread's products are counted; the pool's caller takes part.
    REQUIRE(amx_model::state().products > before);
    // Root-mean-square distance from the f32 model's logits, over all positions.
    auto rms_from_exact = [&](const std::vector<float>& l) {
      double s = 0;
      for (size_t i = 0; i < l.size(); ++i) s += (l[i] - le[i]) * static_cast<double>(l[i] - le[i]);
      return std::sqrt(s / static_cast<double>(l.size()));
    };
    const double d_ref = rms_from_exact(lr), d_amx = rms_from_exact(la);
    int same_top = 0;
    for (size_t t = 0; t < tokens.size(); ++t) {
      const float* a = &lr[t * n_vocab];
      const float* b = &la[t * n_vocab];
      same_top += std::max_element(a, a + n_vocab) - a == std::max_element(b, b + n_vocab) - b;
    }
    INFO("rms distance from the f32 logits: default kernels " << d_ref << ", AMX tables " << d_amx
                                                              << "; same top token at " << same_top << " of "
                                                              << tokens.size());
    // bf16 activations are finer than the default kernels' int8 ones, so the
    // AMX tables land about as close to the f32 model, never much further.
    CHECK(d_amx <= 1.5 * d_ref + 1e-3);
    CHECK(same_top >= static_cast<int>(tokens.size()) * 9 / 10);
  }
}
#endif
