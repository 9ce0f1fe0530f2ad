// A fixed pool of worker threads for the matmuls and other row-parallel work.
//
// Work is handed out in small tasks from a shared atomic counter, so a core
// that another process slows down simply takes fewer tasks instead of stalling
// the step. Idle workers spin briefly, then sleep on a futex: a busy machine
// is not made worse by threads burning a core at a barrier.
#pragma once
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace brisk {

struct ThreadPoolOptions {
  int n_threads = 0;          // 0: one per physical core
  bool pin = true;            // pin each thread to its own physical core (hwloc)
  std::vector<int> cpu_list;  // if non-empty: pin to these logical CPUs, in order
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
  // in [0, size()) and stable for the call, for per-thread scratch.
  using TaskFn = void (*)(void* ctx, int64_t task, int thread);
  void run(int64_t n_tasks, TaskFn fn, void* ctx);

  // Convenience over run() for lambdas.
  template <class F>
  void parallel_for(int64_t n_tasks, F&& f) {
    using Fn = std::remove_reference_t<F>;
    run(n_tasks, [](void* c, int64_t t, int th) { (*static_cast<Fn*>(c))(t, th); }, &f);
  }

  // One line describing the threads and where they are pinned.
  std::string describe() const;

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace brisk
