#include "model/matmul_op.h"

#include <algorithm>

#include "core/error.h"
#include "kernels/matmul.h"
#include "kernels/packed.h"
#include "threads/thread_pool.h"
#include "threads/topology.h"

namespace brisk {

namespace {
constexpr int64_t kRowGroup = 16;  // rows per group: whole SIMD row tiles
int64_t groups_of(const Matrix& w) { return (w.rows + kRowGroup - 1) / kRowGroup; }
// The passes are split in units of two groups: the packed Q4_0/Q8_0 and F16
// tiles take groups in pairs, and a piece of an odd number of groups (the
// halving steps at the end, steals) left one group to a single-stream tile,
// which reads slower: 3% of Q4_0 decode time went to such tiles, and whole
// pairs decoded 0.5% faster (Q8_0 0.4%, 4 and 16 sequences 1-2%; variants
// in turns in one process, 4-6 rounds).
constexpr int64_t kGroupsPerUnit = 2;
int64_t units_of(int64_t n_groups) { return (n_groups + kGroupsPerUnit - 1) / kGroupsPerUnit; }
// Units per claim in a pass of n_units: about 8 claims per thread, at most
// 16 groups (MatmulOp::run).
int64_t split_step(int64_t n_units, int n_threads) {
  return std::clamp<int64_t>(n_units / (8 * static_cast<int64_t>(n_threads)), 1, 16 / kGroupsPerUnit);
}
const kernels::MatmulKernel& kernel_of(const Matrix& w) {
  return w.packed ? *kernels::packed_matmul_kernel(w.type) : kernels::matmul_kernel(w.type);
}
// Ranges per thread in a pass of one column: two where every matrix's kernel
// reads two pieces side by side (MatmulKernel::gemv_two), so that each core
// streams from two places of its stretch (the two halves, each walked front
// to back, so each stays one long sequential stream). One stream per core,
// however prefetched, tops out near 30-32 GB/s on the Zen 5 host; TinyLlama
// decode with two against one, the variants alternating (58 rounds over
// three hours of host moods): Q8_0 +12-20% when the host was slow to serve
// one stream (one stream at 0.66-0.73 of the probe), +3% and +4-20% at two
// other moments, -2% in a fourth (10 rounds); Q4_0 +3-10%, +4%, +1%, 0.
// Two streams cut inside each claimed piece instead lost (Q4_0 -22%,
// Q8_0 -8%): every piece then restarts both streams.
template <typename Matrices>
int ranges_per_thread(const Matrices& ws, int ncols) {
  if (ncols != 1) return 1;
  for (const Matrix* w : ws)
    if (!kernel_of(*w).gemv_two) return 1;
  return 2;
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
  // and the piece it works on): TinyLlama Q4_0 decode ran about 1% faster
  // with it (0.3-2.6% in 6 rounds), 8 and 16 sequences 1-4%; one step capped
  // at 256 KiB gained less than half of that (Zen 5, L2 1 MiB, variants in
  // turns in one process). With two ranges per thread, half of that each.
  const size_t l2 = cpu_topology().l2_bytes ? cpu_topology().l2_bytes : size_t{256} << 10;
  const int per_thread = ranges_per_thread(next, 1);  // decode is where read-ahead matters
  const int n_ranges = per_thread * n_threads;
  // Where range r's first steps lie: inside the matrix that holds its first
  // group (groups [a, b) of a matrix are contiguous bytes in either layout).
  auto first_steps = [&](int r, const uint8_t** p, size_t* bytes) {
    const int64_t g0 = RangeSplit::range_begin(n_units, r, n_ranges) * kGroupsPerUnit;
    const int64_t g_end = std::min(n_groups, RangeSplit::range_begin(n_units, r + 1, n_ranges) * kGroupsPerUnit);
    int64_t first = 0;
    for (const Matrix* w : next) {
      const int64_t ng = groups_of(*w);
      if (g0 < first + ng) {
        const int64_t a = g0 - first, b = std::min({g_end - first, a + 2 * step, ng});
        auto offset = [w](int64_t g) {
          return w->packed ? static_cast<size_t>(g) * w->group_bytes
                           : w->row_bytes * static_cast<size_t>(std::min<int64_t>(w->rows, g * kRowGroup));
        };
        *p = w->data + offset(a);
        *bytes = b > a ? std::min(offset(b) - offset(a), l2 / 2 / per_thread) : 0;
        return;
      }
      first += ng;
    }
    *p = nullptr;
    *bytes = 0;
  };
  for (int t = 1; t < n_threads; ++t) {
    const uint8_t* p[2] = {nullptr, nullptr};
    size_t bytes[2] = {0, 0};
    for (int i = 0; i < per_thread; ++i) first_steps(t * per_thread + i, &p[i], &bytes[i]);
    pool.read_ahead_after_next_run(t, p[0], bytes[0], p[1], bytes[1]);
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
    const kernels::MatmulKernel& kern = kernel_of(*j.w);
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
  // The matrix of the pass that holds group g.
  auto prepared_at = [&](int64_t g) -> const Prepared& {
    size_t i = n - 1;
    while (prep[i].first_group > g) --i;
    return prep[i];
  };
  // Rows of groups [g0, g1) of the pass, cut where one matrix ends.
  auto run_groups = [&](int64_t g0, int64_t g1) {
    while (g0 < g1) {
      const Prepared& p = prepared_at(g0);
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
  // Groups [a0, a1) and [b0, b1) side by side (one column, gemv_two), as
  // long as both have groups in matrices of one kernel; the rest one by one.
  auto run_two = [&](int64_t a0, int64_t a1, int64_t b0, int64_t b1) {
    while (a0 < a1 && b0 < b1) {
      const Prepared& pa = prepared_at(a0);
      const Prepared& pb = prepared_at(b0);
      const Matrix& wa = *pa.job->w;
      const Matrix& wb = *pb.job->w;
      const int64_t len = std::min(std::min(a1, pa.first_group + groups_of(wa)) - a0,
                                   std::min(b1, pb.first_group + groups_of(wb)) - b0);
      if (pa.kern == pb.kern && pa.act == pb.act && wa.group_bytes == wb.group_bytes) {
        const int64_t ra = (a0 - pa.first_group) * kRowGroup, rb = (b0 - pb.first_group) * kRowGroup;
        pa.kern->gemv_two(wa.cols, wa.group_bytes, pa.act, wa.data + static_cast<size_t>(ra / kRowGroup) * wa.group_bytes,
                          static_cast<int>(std::min(wa.rows - ra, len * kRowGroup)), pa.job->out + ra,
                          wb.data + static_cast<size_t>(rb / kRowGroup) * wb.group_bytes,
                          static_cast<int>(std::min(wb.rows - rb, len * kRowGroup)), pb.job->out + rb);
      } else {
        run_groups(a0, a0 + len);
        run_groups(b0, b0 + len);
      }
      a0 += len;
      b0 += len;
    }
    run_groups(a0, a1);
    run_groups(b0, b1);
  };
  const int n_threads = pool.size();
  if (n_threads == 1) {
    run_groups(0, n_groups);
    return;
  }
  // One contiguous stretch of the weights per thread (two for one column
  // where the kernels read two streams: ranges_per_thread), walked a few
  // units at a time (threads/range_split.h): about 8 steps per thread, at
  // most 16 groups (~290 KB of Q4_0 at 2048 columns), halving towards the
  // end. Each claim is a locked instruction, which waits for the loads
  // before it: at 4 groups a step the claims took ~4% of decode time.
  int per_thread = ncols == 1 ? 2 : 1;
  for (size_t i = 0; i < n; ++i)
    if (!prep[i].kern->gemv_two) per_thread = 1;
  const int64_t n_units = units_of(n_groups);
  split_.reset(per_thread * n_threads, n_units, split_step(n_units, n_threads));
  read_ahead(pool, next);
  // A thread walks the range(s) of its own index (not of the task it drew),
  // so worker t's first pieces are those it read ahead. A thread that draws
  // both tasks finds nothing left the second time and returns.
  auto groups = [n_groups](int64_t u) { return std::min(n_groups, u * kGroupsPerUnit); };
  pool.parallel_for(n_threads, [&](int64_t, int thread) {
    int64_t u0, u1;
    if (per_thread == 2) {
      int64_t v0, v1;
      for (;;) {
        const bool a = split_.next_own(2 * thread, &u0, &u1);
        const bool b = split_.next_own(2 * thread + 1, &v0, &v1);
        if (a && b) {
          run_two(groups(u0), groups(u1), groups(v0), groups(v1));
        } else if (a || b) {
          run_groups(a ? groups(u0) : groups(v0), a ? groups(u1) : groups(v1));
        } else {
          break;
        }
      }
    }
    while (split_.next(per_thread * thread, &u0, &u1)) run_groups(groups(u0), groups(u1));
  });
}

}  // namespace brisk
