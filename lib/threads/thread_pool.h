// SPDX-License-Identifier: MIT
// A fixed pool of worker threads for the matmuls and other row-parallel work.
//
// Work is handed out in small tasks from a shared atomic counter, so a core
// that another process slows down simply takes fewer tasks instead of stalling
// the step. Idle workers spin briefly, then sleep on a futex: a busy machine
// is not made worse by threads burning a core at a barrier.
//
// Contract for callers:
//  - One thread owns the pool: it constructs it and is the only one to call
//    run(). run() is not reentrant: a task must not call run() on its pool,
//    and two threads must not call run() at the same time.
//  - With pin=true the workers are pinned; the constructing thread (thread
//    0, the first core or cpu_list[0]) only with pin_caller too, since it
//    belongs to whoever called the library. Its previous CPU mask is given
//    back when the pool is destroyed on that same thread. If another thread
//    calls run(), it is thread 0 but unpinned.
//  - Tasks should not throw (the engine's kernels are noexcept). If one does,
//    no exception escapes a worker thread: the tasks not yet started are
//    skipped, and run() rethrows the first exception on the calling thread
//    once the tasks already running have finished. The pool stays usable.
//  - Workers spin up to ~100 us for the next run() (the caller as long for
//    the last tasks), then sleep on a futex. When threads outnumber the
//    allowed CPUs, or share a CPU through cpu_list, they spin only ~2 us.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace brisk {

struct ThreadPoolOptions {
  int n_threads = 0;          // <= 0: one per physical core, at most the cgroup CPU quota
  bool pin = true;            // pin thread i to the first CPU of physical core i (hwloc);
                              // threads beyond the number of cores stay unpinned
  std::vector<int> cpu_list;  // if non-empty (and pin): thread i goes to logical CPU
                              // cpu_list[i % cpu_list.size()]
  bool pin_caller = false;    // with pin: also pin the constructing thread (thread 0)
  // A thread that cannot be pinned (CPU outside the allowed set, ...) runs
  // unpinned; describe() says so. Pinning never makes the constructor fail.
};

// Physical cores this process may run on (SMT siblings counted once).
int physical_core_count();

class ThreadPool {
 public:
  explicit ThreadPool(const ThreadPoolOptions& options = {});
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Number of threads that run tasks, the caller included.
  int size() const;

  // Calls fn(ctx, task, thread) for every task in [0, n_tasks) and returns
  // when all are done. The calling thread works too (as thread 0). thread is
  // in [0, size()) and stable for the call, for per-thread scratch: no two
  // tasks with the same thread index ever run at the same time. Tasks are
  // handed out one at a time, in increasing order, to whichever thread asks
  // first. n_tasks <= 0 returns at once; size() == 1 or n_tasks == 1 runs
  // inline on the caller without any synchronization.
  using TaskFn = void (*)(void* ctx, int64_t task, int thread);
  void run(int64_t n_tasks, TaskFn fn, void* ctx);

  // Convenience over run() for lambdas.
  template <class F>
  void parallel_for(int64_t n_tasks, F&& f) {
    using Fn = std::remove_reference_t<F>;
    run(n_tasks, [](void* c, int64_t t, int th) { (*static_cast<Fn*>(c))(t, th); }, &f);
  }

  // Memory for worker `thread` (1 .. size() - 1) to read while it waits
  // after the next run(): once that run has no task left for it, the worker
  // loads [p, p + bytes) line by line into its caches, and stops at the
  // following run(), whenever that starts (it checks every 4 KB). The
  // matmul passes use it to bring each worker's first piece of the next
  // pass in while the calling thread works alone between passes, when the
  // memory bus would otherwise idle. A hint for that one run only: bytes == 0
  // clears it. The memory must stay readable as long as the pool exists (a
  // worker notices the next run only between 4 KB chunks). Call between
  // runs, from the thread that calls run().
  void read_ahead_after_next_run(int thread, const void* p, size_t bytes);

  // One line describing the threads and where they are pinned, e.g.
  // "2 threads, pinned to cores 0,1 (cpus 0,1)" or "2 threads, not pinned".
  std::string describe() const;

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace brisk
