// SPDX-License-Identifier: MIT
// The pool keeps all per-job state in two cache lines:
//
//  - the job line, written once per run() by the caller: the generation (the
//    futex word idle workers sleep on), the task function, and `work`, which
//    packs (generation << 32 | tasks not yet claimed). Every thread claims a
//    task with a CAS that decrements `work`. Because the generation is part
//    of the word, a worker that wakes up late and still thinks it is in an
//    older job can never claim a task of a newer one: its CAS fails.
//  - the completion line: `done`, the number of tasks finished in this job
//    (the caller's futex word while it waits for the last tasks).
//
// A thread reads fn/ctx only after a successful claim: the claim's acquire
// pairs with the caller's release store of `work`, and the caller cannot
// publish the next job before this claim is counted in `done`, so the fields
// it reads are those of its job. Each thread adds its count to `done` once,
// after it finds no task left, so a run costs a handful of atomic operations
// on two lines plus one per task.
//
// Read-ahead: each worker has a slot (its own cache line) naming memory to
// read after a given job. The caller fills it between runs while the worker
// may still be reading an older one, so it is a seqlock keyed by the job's
// generation: the worker takes the range only if the generation is its job's
// before and after it copies the fields.
//
// Sleeping: a worker that saw no new job for kSpinNs registers in
// `sleeping_workers` and futex-waits on `generation`; run() calls FUTEX_WAKE
// only when that count is non-zero, so no syscall on the busy path. The
// caller does the same with `caller_sleeping` and `done`. Both handshakes
// are Dekker-style with seq_cst on each side, and FUTEX_WAIT rechecks the
// word in the kernel, so a wake-up cannot be lost.
#include "threads/thread_pool.h"

#include "system/cgroup.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "threads/topology.h"

namespace brisk {

namespace {

constexpr int64_t kSpinNs = 100'000;      // spin budget before sleeping
constexpr int64_t kShortSpinNs = 2'000;   // when threads share CPUs
constexpr int64_t kMaxJobTasks = INT32_MAX;  // `work` and `done` are 32-bit

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) &&
                  std::atomic<uint32_t>::is_always_lock_free,
              "futex words must be plain 32-bit integers");
static_assert(std::atomic<uint64_t>::is_always_lock_free);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield");
#endif
}

void futex_wait(std::atomic<uint32_t>* word, uint32_t expected) {
  // Returns on wake-up, on EAGAIN (the word no longer holds `expected`), on
  // EINTR or spuriously: every caller loops and rechecks.
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, nullptr,
          nullptr, 0);
}

void futex_wake(std::atomic<uint32_t>* word, int count) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, count, nullptr,
          nullptr, 0);
}

// Spins until ready() or until budget_ns have passed; returns ready()'s last value.
template <class Ready>
bool spin_until(Ready ready, int64_t budget_ns) {
  if (ready()) return true;
  const auto start = std::chrono::steady_clock::now();
  const auto budget = std::chrono::nanoseconds(budget_ns);
  for (;;) {
    for (int i = 0; i < 32; ++i) {
      cpu_relax();
      if (ready()) return true;
    }
    if (std::chrono::steady_clock::now() - start > budget) return ready();
  }
}

int pin_thread(pthread_t thread, int cpu) {
  if (cpu < 0 || cpu >= CPU_SETSIZE) return EINVAL;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(thread, sizeof(set), &set);
}

std::string join(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(v[i]);
  }
  return s;
}

}  // namespace

int physical_core_count() {
  return std::max(1, static_cast<int>(cpu_topology().cores.size()));
}

struct ThreadPool::Impl {
  // The constructing thread's CPU mask before the pool pinned it: given back
  // when the pool goes away, so a library user's thread does not stay pinned.
  pthread_t owner{};
  cpu_set_t owner_mask{};
  bool restore_owner = false;
  // Job line: written by the caller once per run, read by every thread.
  alignas(64) std::atomic<uint32_t> generation{0};  // idle workers' futex word
  std::atomic<uint64_t> work{0};                    // generation << 32 | unclaimed tasks
  std::atomic<TaskFn> fn{nullptr};
  std::atomic<void*> ctx{nullptr};
  std::atomic<int64_t> first_task{0};
  std::atomic<uint32_t> n_tasks{0};
  std::atomic<bool> stop{false};

  // Completion line: tasks of the current job that are finished (or skipped).
  alignas(64) std::atomic<uint32_t> done{0};  // the caller's futex word

  // Sleep bookkeeping, written only when a thread goes to sleep.
  alignas(64) std::atomic<uint32_t> sleeping_workers{0};
  std::atomic<uint32_t> caller_sleeping{0};

  struct alignas(64) ReadAhead {
    std::atomic<uint32_t> generation{0};  // the job it follows; 0: none
    std::atomic<const uint8_t*> p{nullptr};
    std::atomic<size_t> bytes{0};
  };
  std::unique_ptr<ReadAhead[]> read_ahead;  // one per thread (slot 0 unused)

  // Cold state.
  alignas(64) int n_threads = 1;
  uint32_t caller_generation = 0;  // the caller's copy of `generation`
  int64_t spin_ns = kSpinNs;
  std::vector<std::thread> workers;
  std::string description;
  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  std::exception_ptr error;

  void record_error() noexcept {
    std::lock_guard<std::mutex> lock(error_mutex);
    if (!error) error = std::current_exception();
    failed.store(true, std::memory_order_relaxed);
  }

  // Claims and runs tasks of the current job until none is left, then adds
  // them to `done` and wakes the caller if it was the last and it sleeps.
  void work_on_tasks(int thread) noexcept {
    uint64_t w = work.load(std::memory_order_acquire);
    uint32_t count = 0;
    TaskFn f = nullptr;
    void* c = nullptr;
    int64_t first = 0;
    uint32_t n = 0;
    while (static_cast<uint32_t>(w) != 0) {
      if (!work.compare_exchange_weak(w, w - 1, std::memory_order_acquire,
                                      std::memory_order_acquire))
        continue;
      if (count == 0) {
        f = fn.load(std::memory_order_relaxed);
        c = ctx.load(std::memory_order_relaxed);
        first = first_task.load(std::memory_order_relaxed);
        n = n_tasks.load(std::memory_order_relaxed);
      }
      ++count;
      const int64_t task = first + (n - static_cast<uint32_t>(w));
      try {
        f(c, task, thread);
      } catch (...) {
        record_error();
        // Skip the tasks nobody has claimed; they count as done. The
        // generation cannot have moved: this thread's task is not counted yet.
        count += static_cast<uint32_t>(work.exchange(w & ~uint64_t{UINT32_MAX}));
      }
      w = work.load(std::memory_order_acquire);
    }
    if (count == 0) return;
    const uint32_t now = done.fetch_add(count, std::memory_order_seq_cst) + count;
    if (now == n && caller_sleeping.load(std::memory_order_seq_cst))
      futex_wake(&done, 1);
  }

  // Reads the memory named for after job `seen`, if any, until a new job
  // is published. One 8-byte load per line: the loads are independent, so
  // the core keeps as many lines in flight as it can, as a streaming read
  // does.
  void read_ahead_after(int thread, uint32_t seen) noexcept {
    ReadAhead& r = read_ahead[thread];
    if (r.generation.load(std::memory_order_acquire) != seen) return;
    const uint8_t* p = r.p.load(std::memory_order_relaxed);
    const size_t bytes = r.bytes.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (r.generation.load(std::memory_order_relaxed) != seen || !p) return;
    uint64_t sum = 0;
    for (size_t at = 0; at < bytes; at += 4096) {
      if (generation.load(std::memory_order_relaxed) != seen) break;
      const size_t end = std::min(bytes, at + 4096);
      for (size_t o = at; o < end; o += 64) {
        uint64_t v;
        std::memcpy(&v, p + o, sizeof v);
        sum += v;
      }
    }
    // Keep the loads: the sum goes nowhere, but the compiler cannot know.
    asm volatile("" : : "r"(sum));
  }

  void worker_main(int thread) noexcept {
    uint32_t seen = 0;
    for (;;) {
      auto changed = [&] { return generation.load(std::memory_order_acquire) != seen; };
      if (!spin_until(changed, spin_ns)) {
        sleeping_workers.fetch_add(1, std::memory_order_seq_cst);
        while (generation.load(std::memory_order_seq_cst) == seen) futex_wait(&generation, seen);
        sleeping_workers.fetch_sub(1, std::memory_order_relaxed);
      }
      seen = generation.load(std::memory_order_acquire);
      if (stop.load(std::memory_order_acquire)) return;
      work_on_tasks(thread);
      read_ahead_after(thread, seen);
    }
  }

  void run_job(int64_t first, uint32_t n, TaskFn f, void* c) {
    fn.store(f, std::memory_order_relaxed);
    ctx.store(c, std::memory_order_relaxed);
    first_task.store(first, std::memory_order_relaxed);
    n_tasks.store(n, std::memory_order_relaxed);
    done.store(0, std::memory_order_relaxed);
    const uint32_t gen = ++caller_generation;
    work.store(uint64_t{gen} << 32 | n, std::memory_order_release);
    generation.store(gen, std::memory_order_seq_cst);
    if (sleeping_workers.load(std::memory_order_seq_cst) != 0) futex_wake(&generation, INT_MAX);

    work_on_tasks(0);

    auto finished = [&] { return done.load(std::memory_order_acquire) == n; };
    if (!spin_until(finished, spin_ns)) {
      for (;;) {
        caller_sleeping.store(1, std::memory_order_seq_cst);
        const uint32_t d = done.load(std::memory_order_seq_cst);
        if (d == n) break;
        futex_wait(&done, d);
      }
      caller_sleeping.store(0, std::memory_order_relaxed);
    }

    if (failed.load(std::memory_order_acquire)) {
      std::exception_ptr e;
      {
        std::lock_guard<std::mutex> lock(error_mutex);
        std::swap(e, error);
        failed.store(false, std::memory_order_relaxed);
      }
      std::rethrow_exception(e);
    }
  }

  void shutdown() noexcept {
    stop.store(true, std::memory_order_relaxed);
    generation.fetch_add(1, std::memory_order_seq_cst);  // release: publishes `stop`
    futex_wake(&generation, INT_MAX);
    for (auto& t : workers)
      if (t.joinable()) t.join();
  }
};

ThreadPool::ThreadPool(const ThreadPoolOptions& options) : impl_(new Impl) {
  Impl& p = *impl_;
  const CpuTopology& topo = cpu_topology();
  const int n = options.n_threads > 0 ? options.n_threads : sys::default_thread_count(physical_core_count());
  p.n_threads = n;

  // Where each thread should go: a CPU (or -1) and, for core pinning, the core.
  std::vector<int> want_cpu(n, -1), want_core(n, -1);
  std::string unpinned_reason;
  const bool by_cpu_list = options.pin && !options.cpu_list.empty();
  if (by_cpu_list) {
    for (int i = 0; i < n; ++i) want_cpu[i] = options.cpu_list[i % options.cpu_list.size()];
  } else if (options.pin) {
    for (int i = 0; i < n && i < static_cast<int>(topo.cores.size()); ++i) {
      want_cpu[i] = topo.cores[i].cpus.front();
      want_core[i] = topo.cores[i].index;
    }
    if (n > static_cast<int>(topo.cores.size())) unpinned_reason = "more threads than cores";
  }
  // The caller's thread keeps its place unless asked; workers still take
  // cores 1.. so the caller has the first one to itself when it stays there.
  const bool caller_left_alone = options.pin && !options.pin_caller && want_cpu[0] >= 0;
  if (caller_left_alone) want_cpu[0] = -1;

  std::vector<int> cpu(n, -1);  // where each thread actually is pinned
  auto try_pin = [&](int i, pthread_t handle) {
    if (want_cpu[i] < 0) return;
    const int err = pin_thread(handle, want_cpu[i]);
    if (err == 0) {
      cpu[i] = want_cpu[i];
    } else if (unpinned_reason.empty()) {
      unpinned_reason = "cannot pin to cpu " + std::to_string(want_cpu[i]) + ": " + std::strerror(err);
    }
  };

  // Spinning only pays when every thread has a CPU of its own.
  std::set<int> distinct(want_cpu.begin(), want_cpu.end());
  distinct.erase(-1);
  const int pinned_wanted = static_cast<int>(std::count_if(
      want_cpu.begin(), want_cpu.end(), [](int c) { return c >= 0; }));
  const bool shared_cpus = n > topo.n_cpus || static_cast<int>(distinct.size()) < pinned_wanted;
  p.spin_ns = shared_cpus ? kShortSpinNs : kSpinNs;

  p.read_ahead = std::make_unique<Impl::ReadAhead[]>(static_cast<size_t>(n));
  p.owner = pthread_self();
  p.restore_owner = pthread_getaffinity_np(p.owner, sizeof(p.owner_mask), &p.owner_mask) == 0;
  try_pin(0, pthread_self());
  try {
    p.workers.reserve(n - 1);
    for (int i = 1; i < n; ++i) {
      p.workers.emplace_back(&Impl::worker_main, impl_, i);
      const pthread_t handle = p.workers.back().native_handle();
      const std::string name = "brisk-w" + std::to_string(i);
      pthread_setname_np(handle, name.substr(0, 15).c_str());
      try_pin(i, handle);
    }
  } catch (...) {
    p.shutdown();
    delete impl_;
    throw;
  }

  // Description.
  std::string d = std::to_string(n) + (n == 1 ? " thread" : " threads");
  std::vector<int> pinned_cpus, pinned_cores, unpinned;
  for (int i = 0; i < n; ++i) {
    if (cpu[i] >= 0) {
      pinned_cpus.push_back(cpu[i]);
      pinned_cores.push_back(want_core[i]);
    } else if (!(i == 0 && caller_left_alone)) {
      unpinned.push_back(i);
    }
  }
  if (pinned_cpus.empty()) {
    d += ", not pinned";
    if (!unpinned_reason.empty()) d += " (" + unpinned_reason + ")";
  } else {
    if (by_cpu_list)
      d += ", pinned to cpus " + join(pinned_cpus);
    else
      d += ", pinned to cores " + join(pinned_cores) + " (cpus " + join(pinned_cpus) + ")";
    if (!unpinned.empty()) {
      d += unpinned.size() == 1 ? "; thread " : "; threads ";
      d += join(unpinned) + " not pinned";
      if (!unpinned_reason.empty()) d += " (" + unpinned_reason + ")";
    }
  }
  if (caller_left_alone && !pinned_cpus.empty()) d += "; calling thread not pinned";
  const int nodes = cpu_topology().numa_nodes;
  if (nodes > 1) d += "; " + std::to_string(nodes) + " NUMA nodes, weights and KV interleaved";
  p.description = std::move(d);
}

ThreadPool::~ThreadPool() {
  impl_->shutdown();
  if (impl_->restore_owner && pthread_equal(impl_->owner, pthread_self()))
    pthread_setaffinity_np(impl_->owner, sizeof(impl_->owner_mask), &impl_->owner_mask);
  delete impl_;
}

int ThreadPool::size() const { return impl_->n_threads; }

std::string ThreadPool::describe() const { return impl_->description; }

void ThreadPool::read_ahead_after_next_run(int thread, const void* p, size_t bytes) {
  if (thread < 1 || thread >= impl_->n_threads) return;
  Impl::ReadAhead& r = impl_->read_ahead[thread];
  r.generation.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  r.p.store(static_cast<const uint8_t*>(p), std::memory_order_relaxed);
  r.bytes.store(p ? bytes : 0, std::memory_order_relaxed);
  // The next run_job publishes caller_generation + 1 (0 is never a job's
  // generation: it would wrap only after 2^32 runs, and then at worst one
  // read-ahead runs after the wrong job).
  r.generation.store(bytes ? impl_->caller_generation + 1 : 0, std::memory_order_release);
}

void ThreadPool::run(int64_t n_tasks, TaskFn fn, void* ctx) {
  if (n_tasks <= 0) return;
  if (impl_->n_threads == 1 || n_tasks == 1) {
    for (int64_t t = 0; t < n_tasks; ++t) fn(ctx, t, 0);
    return;
  }
  for (int64_t first = 0; first < n_tasks; first += kMaxJobTasks)
    impl_->run_job(first, static_cast<uint32_t>(std::min(kMaxJobTasks, n_tasks - first)), fn, ctx);
}

}  // namespace brisk
