#include "model/matmul_op.h"

#include <algorithm>

#include "kernels/matmul.h"
#include "threads/thread_pool.h"

namespace brisk {

void MatmulOp::run(ThreadPool& pool, const Matrix& w, const float* x, int64_t x_stride, int ncols, float* out,
                   int64_t out_stride) {
  if (observer_) observer_->observe(w, x, x_stride, ncols);
  const kernels::MatmulKernel& kern = kernels::matmul_kernel(w.type);
  const int64_t k = w.cols;
  const void* act;
  size_t act_stride;
  if (kern.act_type == TensorType::F32) {
    act = x;
    act_stride = static_cast<size_t>(x_stride) * sizeof(float);
  } else {
    act_stride = row_bytes(kern.act_type, k);
    if (cached_src_ != x || cached_type_ != kern.act_type || cached_ncols_ != ncols || cached_k_ != k) {
      if (act_.size() < act_stride * static_cast<size_t>(ncols)) act_.resize(act_stride * static_cast<size_t>(ncols));
      uint8_t* dst = act_.data();
      auto quantize = [&](int64_t c, int) { kern.quantize_act(x + c * x_stride, dst + c * act_stride, k); };
      if (ncols >= 4) {
        pool.parallel_for(ncols, quantize);
      } else {
        for (int c = 0; c < ncols; ++c) quantize(c, 0);
      }
      cached_src_ = x;
      cached_type_ = kern.act_type;
      cached_ncols_ = ncols;
      cached_k_ = k;
    }
    act = act_.data();
  }

  // Tasks of a few rows each: enough tasks (about 8 per thread) that a thread
  // slowed by another process just takes fewer, few enough that per-task
  // overhead stays small. Multiples of 16 rows keep SIMD row tiles whole.
  const int64_t rows = w.rows;
  const int64_t target_tasks = static_cast<int64_t>(pool.size()) * 8;
  int64_t chunk = (rows + target_tasks - 1) / target_tasks;
  chunk = std::max<int64_t>(16, (chunk + 15) / 16 * 16);
  const int64_t n_tasks = (rows + chunk - 1) / chunk;
  auto task = [&](int64_t t, int) {
    const int64_t r0 = t * chunk;
    const int nr = static_cast<int>(std::min(chunk, rows - r0));
    kern.gemm(k, w.row(r0), w.row_bytes, nr, act, act_stride, ncols, out + r0, static_cast<size_t>(out_stride));
  };
  if (n_tasks == 1) {
    task(0, 0);
  } else {
    pool.parallel_for(n_tasks, task);
  }
}

}  // namespace brisk
