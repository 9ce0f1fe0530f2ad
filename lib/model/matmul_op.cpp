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
    int64_t first_group;  // in the pass's row groups, all matrices end to end
  };
  Prepared prep[4];
  if (jobs.size() > 4) fail(BRISK_ERR_INTERNAL, "too many matrices in one matmul pass");
  int64_t n_groups = 0;
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
    p.first_group = n_groups;
    n_groups += (j.w->rows + kRowGroup - 1) / kRowGroup;
  }
  // Rows of groups [g0, g1) of the pass, cut where one matrix ends.
  auto run_groups = [&](int64_t g0, int64_t g1) {
    while (g0 < g1) {
      size_t i = n - 1;
      while (prep[i].first_group > g0) --i;
      const Prepared& p = prep[i];
      const Matrix& w = *p.job->w;
      const int64_t end = std::min(g1, p.first_group + (w.rows + kRowGroup - 1) / kRowGroup);
      const int64_t r0 = (g0 - p.first_group) * kRowGroup;
      const int nr = static_cast<int>(std::min(w.rows, (end - p.first_group) * kRowGroup) - r0);
      // Groups are 16 rows, so a packed piece starts on a packed row group.
      const uint8_t* first = w.packed ? w.data + static_cast<size_t>(r0 / kernels::kPackRows) * w.group_bytes : w.row(r0);
      p.kern->gemm(w.cols, first, w.packed ? w.group_bytes : w.row_bytes, nr, p.act, p.act_stride, ncols,
                   p.job->out + r0, static_cast<size_t>(p.job->out_stride));
      g0 = end;
    }
  };
  const int n_threads = pool.size();
  if (n_threads == 1) {
    run_groups(0, n_groups);
    return;
  }
  // One contiguous stretch of the weights per thread, walked a few groups at
  // a time (threads/range_split.h): about 8 steps per thread, at most 16
  // groups (~290 KB of Q4_0 at 2048 columns), halving towards the end. Each
  // claim is a locked instruction, which waits for the loads before it: at
  // 4 groups a step the claims took ~4% of decode time.
  const int64_t step = std::clamp<int64_t>(n_groups / (8 * static_cast<int64_t>(n_threads)), 1, 16);
  split_.reset(n_threads, n_groups, step);
  pool.parallel_for(n_threads, [&](int64_t range, int) {
    int64_t g0, g1;
    while (split_.next(static_cast<int>(range), &g0, &g1)) run_groups(g0, g1);
  });
}

}  // namespace brisk
