#include "model/matmul_op.h"

#include <algorithm>

#include "core/error.h"
#include "kernels/matmul.h"
#include "kernels/packed.h"
#include "threads/thread_pool.h"

namespace brisk {

const uint8_t* MatmulOp::converted(ThreadPool& pool, QuantizeFn quantize, size_t stride, const float* x,
                                   int64_t x_stride, int ncols, int64_t k) {
  ActBuffer* slot = nullptr;
  for (ActBuffer& a : acts_) {
    if (a.src == x && a.quantize == quantize && a.ncols == ncols && a.k == k) return a.bytes.data();
    if (!slot && a.src == nullptr) slot = &a;
  }
  if (!slot) slot = &acts_[0];
  if (slot->bytes.size() < stride * static_cast<size_t>(ncols)) slot->bytes.resize(stride * static_cast<size_t>(ncols));
  uint8_t* dst = slot->bytes.data();
  auto convert = [&](int64_t c, int) { quantize(x + c * x_stride, dst + c * stride, k); };
  // A column converts in about a microsecond: below a prompt-sized batch a
  // parallel pass costs more in its barrier than it saves.
  if (ncols >= 32) {
    pool.parallel_for(ncols, convert);
  } else {
    for (int c = 0; c < ncols; ++c) convert(c, 0);
  }
  *slot = ActBuffer{std::move(slot->bytes), x, quantize, ncols, k};
  return slot->bytes.data();
}

void MatmulOp::run(ThreadPool& pool, const Matrix& w, const float* x, int64_t x_stride, int ncols, float* out,
                   int64_t out_stride) {
  run(pool, {MatmulJob{&w, out, out_stride}}, x, x_stride, ncols);
}

void MatmulOp::run(ThreadPool& pool, std::initializer_list<MatmulJob> jobs, const float* x, int64_t x_stride,
                   int ncols) {
  struct Prepared {
    const MatmulJob* job;
    const kernels::MatmulKernel* kern;
    const void* act;
    size_t act_stride;
    int64_t chunk, first_task;
  };
  Prepared prep[4];
  if (jobs.size() > 4) fail(BRISK_ERR_INTERNAL, "too many matrices in one matmul pass");
  // Tasks of a few rows each: about 8 per thread over all the matrices, so a
  // thread slowed by another process just takes fewer; multiples of 16 rows
  // keep SIMD row tiles whole.
  int64_t total_rows = 0;
  for (const MatmulJob& j : jobs) total_rows += j.w->rows;
  const int64_t target_tasks = static_cast<int64_t>(pool.size()) * 8;
  int64_t chunk = (total_rows + target_tasks - 1) / target_tasks;
  chunk = std::max<int64_t>(16, (chunk + 15) / 16 * 16);
  int64_t n_tasks = 0;
  size_t n = 0;
  for (const MatmulJob& j : jobs) {
    if (observer_) observer_->observe(*j.w, x, x_stride, ncols);
    const kernels::MatmulKernel& kern =
        j.w->packed ? *kernels::packed_matmul_kernel(j.w->type) : kernels::matmul_kernel(j.w->type);
    Prepared& p = prep[n++];
    p.job = &j;
    p.kern = &kern;
    if (kern.act_type == TensorType::F32) {
      p.act = x;
      p.act_stride = static_cast<size_t>(x_stride) * sizeof(float);
    } else {
      p.act_stride = kernels::act_column_bytes(kern, j.w->cols);
      p.act = converted(pool, kern.quantize_act, p.act_stride, x, x_stride, ncols, j.w->cols);
    }
    p.chunk = chunk;
    p.first_task = n_tasks;
    n_tasks += (j.w->rows + chunk - 1) / chunk;
  }
  auto task = [&](int64_t t, int) {
    size_t i = n - 1;
    while (prep[i].first_task > t) --i;
    const Prepared& p = prep[i];
    const Matrix& w = *p.job->w;
    const int64_t r0 = (t - p.first_task) * p.chunk;
    const int nr = static_cast<int>(std::min(p.chunk, w.rows - r0));
    // Chunks are multiples of 16 rows, so a packed chunk starts on a group.
    const uint8_t* first = w.packed ? w.data + static_cast<size_t>(r0 / kernels::kPackRows) * w.group_bytes : w.row(r0);
    p.kern->gemm(w.cols, first, w.packed ? w.group_bytes : w.row_bytes, nr, p.act, p.act_stride, ncols,
                 p.job->out + r0, static_cast<size_t>(p.job->out_stride));
  };
  if (n_tasks == 1) {
    task(0, 0);
  } else {
    pool.parallel_for(n_tasks, task);
  }
}

}  // namespace brisk
