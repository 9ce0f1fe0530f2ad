// SPDX-License-Identifier: MIT
// MatmulOp (model/matmul_op.h): a pass split over threads (ranges, steps,
// steals, read-ahead between passes) computes what one thread computes, bit
// for bit, whatever the kernels of the pass's matrices.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "core/tensor_type.h"
#include "kernels/matmul.h"
#include "kernels/packed.h"
#include "model/matmul_op.h"
#include "model/weights.h"
#include "quant/quant.h"
#include "threads/thread_pool.h"

using namespace brisk;

namespace {

// A random matrix quantized to `type`, packed if the active ISA has a packed
// kernel for it (as Weights::pack_for_kernels does).
struct TestMatrix {
  std::vector<uint8_t> bytes;
  Matrix m;
  TestMatrix(TensorType type, int64_t rows, int64_t cols, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const size_t rb = row_bytes(type, cols);
    std::vector<uint8_t> rowmajor(rb * rows);
    std::vector<float> row(cols);
    for (int64_t r = 0; r < rows; ++r) {
      for (float& v : row) v = nd(rng);
      quant::quantize_row(type, row.data(), rowmajor.data() + r * rb, cols);
    }
    m.type = type;
    m.rows = rows;
    m.cols = cols;
    m.row_bytes = rb;
    if (kernels::packable(type, cols) && kernels::packed_matmul_kernel(type)) {
      const size_t gb = kernels::packed_group_bytes(type, cols);
      const int64_t groups = (rows + kernels::kPackRows - 1) / kernels::kPackRows;
      bytes.assign(gb * groups, 0);
      for (int64_t g = 0; g < groups; ++g)
        kernels::pack_row_group(type, rowmajor.data() + g * kernels::kPackRows * rb, rb,
                                static_cast<int>(std::min<int64_t>(kernels::kPackRows, rows - g * kernels::kPackRows)),
                                cols, bytes.data() + g * gb);
      m.packed = true;
      m.group_bytes = gb;
    } else {
      bytes = std::move(rowmajor);
    }
    m.data = bytes.data();
  }
};

ThreadPoolOptions unpinned(int n) {
  ThreadPoolOptions o;
  o.n_threads = n;
  o.pin = false;
  return o;
}

// The pass of `ws` over ncols random columns on a pool of n_threads.
std::vector<std::vector<float>> run_pass(const std::vector<const TestMatrix*>& ws, int ncols, int n_threads) {
  const int64_t k = ws[0]->m.cols;
  std::mt19937 rng(99);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(k) * ncols);
  for (float& v : x) v = nd(rng);
  std::vector<std::vector<float>> out(ws.size());
  for (size_t i = 0; i < ws.size(); ++i) out[i].assign(static_cast<size_t>(ws[i]->m.rows) * ncols, -1.0f);
  ThreadPool pool(unpinned(n_threads));
  MatmulOp op;
  // Several passes, so read-ahead hints are set and followed between them.
  for (int rep = 0; rep < 3; ++rep) {
    op.invalidate();
    auto job = [&](size_t i) { return MatmulJob{&ws[i]->m, out[i].data(), ws[i]->m.rows}; };
    if (ws.size() == 1) {
      op.run(pool, {job(0)}, x.data(), k, ncols, {&ws[0]->m});
    } else if (ws.size() == 2) {
      op.run(pool, {job(0), job(1)}, x.data(), k, ncols, {&ws[0]->m, &ws[1]->m});
    } else {
      op.run(pool, {job(0), job(1), job(2)}, x.data(), k, ncols, {&ws[0]->m, &ws[1]->m, &ws[2]->m});
    }
  }
  return out;
}

}  // namespace

TEST_CASE("a matmul pass over threads equals one thread's, for every mix of kernels", "[matmul_op]") {
  // Row counts as Q/K/V (odd group counts, partial last groups) and a pass
  // long enough for many claims per range.
  const TestMatrix q8a(TensorType::Q8_0, 160, 256, 1), q8b(TensorType::Q8_0, 48, 256, 2),
      q8c(TensorType::Q8_0, 33, 256, 3), q4a(TensorType::Q4_0, 97, 256, 4), q4big(TensorType::Q4_0, 1500, 256, 5),
      q4k(TensorType::Q4_K, 70, 256, 6), f32(TensorType::F32, 40, 256, 7);
  const std::vector<std::vector<const TestMatrix*>> passes = {
      {&q8a, &q8b, &q8c},  // Q/K/V-like: pieces cut where a matrix ends
      {&q8a, &q4a},        // two packed kernels in one pass
      {&q4big},            // many steps per range, halving at the ends
      {&q4a, &q4k},        // Q8_0-sums and Q8_K activations in one pass
      {&f32, &q8b},        // row-major float beside packed
  };
  for (size_t p = 0; p < passes.size(); ++p)
    for (int ncols : {1, 2, 5}) {
      const auto one = run_pass(passes[p], ncols, 1);
      for (int threads : {2, 3}) {
        INFO("pass " << p << " columns " << ncols << " threads " << threads);
        REQUIRE(run_pass(passes[p], ncols, threads) == one);
      }
    }
}
