// SPDX-License-Identifier: MIT
#include "model/matmul_op.h"

#include <algorithm>

#include "core/error.h"
#include "kernels/matmul.h"
#include "kernels/packed.h"
#include "kernels/variants.h"
#include "threads/thread_pool.h"
#include "threads/topology.h"

namespace brisk {

namespace {
constexpr int64_t kRowGroup = 16;  // rows per group: whole SIMD row tiles
int64_t groups_of(const Matrix& w) { return (w.rows + kRowGroup - 1) / kRowGroup; }
// The passes are split in units of two groups: the packed Q4_0/Q8_0 and F16
// tiles take groups in pairs, and a piece of an odd number of groups (the
// halving steps at the end, steals) left one group to a single-stream tile,
// which reads slower; whole pairs measured faster.
constexpr int64_t kGroupsPerUnit = 2;
int64_t units_of(int64_t n_groups) { return (n_groups + kGroupsPerUnit - 1) / kGroupsPerUnit; }
// Units per claim in a pass of n_units: about 8 claims per thread, at most
// 16 groups (MatmulOp::run).
int64_t split_step(int64_t n_units, int n_threads) {
  return std::clamp<int64_t>(n_units / (8 * static_cast<int64_t>(n_threads)), 1, 16 / kGroupsPerUnit);
}
// The plan's kernel for this column count, else the active ISA's default
// for the matrix's layout.
const kernels::MatmulKernel& kernel_for(const Matrix& w, int ncols) {
  const kernels::MatmulKernel* k = w.kernels[static_cast<int>(kernels::col_class(ncols))];
  if (k && k->packed == w.packed) return *k;
  if (!w.packed) return kernels::matmul_kernel(w.type);
  k = kernels::packed_matmul_kernel(w.type);
  return k ? *k : *kernels::packed_matmul_kernel_for(w.type, kernels::Isa::scalar);
}
}  // namespace

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
                   int64_t out_stride, std::initializer_list<const Matrix*> next) {
  run(pool, {MatmulJob{&w, out, out_stride}}, x, x_stride, ncols, next);
}

void MatmulOp::read_ahead(ThreadPool& pool, std::initializer_list<const Matrix*> next) const {
  const int n_threads = pool.size();
  int64_t n_groups = 0;
  for (const Matrix* w : next) n_groups += groups_of(*w);
  if (n_groups == 0) return;
  const int64_t n_units = units_of(n_groups);
  const int64_t step = split_step(n_units, n_threads) * kGroupsPerUnit;  // in groups
  // Two steps, at most half the worker's L2 (the rest holds the activations
  // and the piece it works on), which measured faster than one step capped
  // lower.
  const size_t l2 = cpu_topology().l2_bytes ? cpu_topology().l2_bytes : size_t{256} << 10;
  for (int t = 1; t < n_threads; ++t) {
    // Thread t's stretch starts at group g0; its first steps stay inside
    // the matrix that holds g0.
    const int64_t g0 = RangeSplit::range_begin(n_units, t, n_threads) * kGroupsPerUnit;
    const int64_t g_end = std::min(n_groups, RangeSplit::range_begin(n_units, t + 1, n_threads) * kGroupsPerUnit);
    int64_t first = 0;
    for (const Matrix* w : next) {
      const int64_t ng = groups_of(*w);
      if (g0 < first + ng) {
        const int64_t a = g0 - first, b = std::min({g_end - first, a + 2 * step, ng});
        // Groups [a, b) of w are contiguous bytes in either layout.
        auto offset = [w](int64_t g) {
          return w->packed ? static_cast<size_t>(g) * w->group_bytes
                           : w->row_bytes * static_cast<size_t>(std::min<int64_t>(w->rows, g * kRowGroup));
        };
        pool.read_ahead_after_next_run(t, w->data + offset(a), std::min(offset(b) - offset(a), l2 / 2));
        break;
      }
      first += ng;
    }
  }
}

void MatmulOp::run(ThreadPool& pool, std::initializer_list<MatmulJob> jobs, const float* x, int64_t x_stride,
                   int ncols, std::initializer_list<const Matrix*> next) {
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
    const kernels::MatmulKernel& kern = kernel_for(*j.w, ncols);
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
    n_groups += groups_of(*j.w);
  }
  // Rows of groups [g0, g1) of the pass, cut where one matrix ends.
  auto run_groups = [&](int64_t g0, int64_t g1) {
    while (g0 < g1) {
      size_t i = n - 1;
      while (prep[i].first_group > g0) --i;
      const Prepared& p = prep[i];
      const Matrix& w = *p.job->w;
      const int64_t end = std::min(g1, p.first_group + groups_of(w));
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
  // One contiguous stretch of the weights per thread, walked a few units at
  // a time (threads/range_split.h): about 8 steps per thread, at most 16
  // groups (~290 KB of Q4_0 at 2048 columns), halving towards the end. Each
  // claim is a locked instruction, which waits for the loads before it, so
  // steps must not be so small that claims cost a visible share of a pass.
  const int64_t n_units = units_of(n_groups);
  split_.reset(n_threads, n_units, split_step(n_units, n_threads));
  read_ahead(pool, next);
  // A thread walks the range of its own index (not of the task it drew), so
  // worker t's first pieces are those it read ahead. A thread that draws
  // both tasks finds nothing left the second time and returns.
  pool.parallel_for(n_threads, [&](int64_t, int thread) {
    int64_t u0, u1;
    while (split_.next(thread, &u0, &u1)) run_groups(u0 * kGroupsPerUnit, std::min(n_groups, u1 * kGroupsPerUnit));
  });
}

}  // namespace brisk
