// SPDX-License-Identifier: MIT
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <catch2/catch.hpp>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "threads/thread_pool.h"
#include "threads/topology.h"

using brisk::ThreadPool;
using brisk::ThreadPoolOptions;

namespace {

// A pool with pin=true pins the thread that builds it (here the test runner's
// main thread); put its affinity back so the rest of the suite is unaffected.
struct AffinityGuard {
  cpu_set_t saved;
  bool ok;
  AffinityGuard() { ok = sched_getaffinity(0, sizeof(saved), &saved) == 0; }
  ~AffinityGuard() {
    if (ok) sched_setaffinity(0, sizeof(saved), &saved);
  }
};

ThreadPoolOptions unpinned(int n) {
  ThreadPoolOptions o;
  o.n_threads = n;
  o.pin = false;
  return o;
}

// Runs n tasks and checks each index ran exactly once, on a valid thread.
void check_exactly_once(ThreadPool& pool, int64_t n) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
  for (auto& h : hits) h.store(0);
  std::atomic<int> bad_thread{0};
  pool.parallel_for(n, [&](int64_t t, int th) {
    if (th < 0 || th >= pool.size()) bad_thread.fetch_add(1);
    hits[static_cast<size_t>(t)].fetch_add(1);
  });
  CHECK(bad_thread.load() == 0);
  int64_t wrong = 0;
  for (auto& h : hits) wrong += h.load() != 1;
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("physical_core_count is at least one and sizes the default pool", "[threads]") {
  const int cores = brisk::physical_core_count();
  REQUIRE(cores >= 1);
  REQUIRE(cores <= static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  REQUIRE(brisk::cpu_topology().n_cpus >= cores);
  ThreadPoolOptions o;
  o.pin = false;
  ThreadPool pool(o);
  CHECK(pool.size() == cores);
}

TEST_CASE("every task index runs exactly once", "[threads]") {
  for (int threads : {1, 2, 3, 4}) {
    ThreadPool pool(unpinned(threads));
    REQUIRE(pool.size() == threads);
    const int s = pool.size();
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{s - 1}, int64_t{s}, int64_t{s + 1},
                      int64_t{7}, int64_t{64}, int64_t{1000}}) {
      INFO("threads " << threads << ", n_tasks " << n);
      check_exactly_once(pool, n);
    }
  }
}

TEST_CASE("n_tasks of zero or less calls nothing", "[threads]") {
  ThreadPool pool(unpinned(2));
  int calls = 0;
  pool.parallel_for(0, [&](int64_t, int) { ++calls; });
  pool.parallel_for(-5, [&](int64_t, int) { ++calls; });
  CHECK(calls == 0);
}

TEST_CASE("10,000 back-to-back small runs complete before returning", "[threads]") {
  ThreadPool pool(unpinned(2));
  constexpr int kRuns = 10'000;
  constexpr int kTasks = 8;
  // Plain (non-atomic) writes: run() must make them visible to the caller.
  std::vector<int> last_run(kTasks, -1);
  std::vector<std::atomic<int>> per_task(kTasks);
  for (auto& c : per_task) c.store(0);
  int64_t stale = 0;
  for (int r = 0; r < kRuns; ++r) {
    pool.parallel_for(kTasks, [&](int64_t t, int) {
      last_run[static_cast<size_t>(t)] = r;
      per_task[static_cast<size_t>(t)].fetch_add(1, std::memory_order_relaxed);
    });
    for (int t = 0; t < kTasks; ++t) stale += last_run[static_cast<size_t>(t)] != r;
  }
  CHECK(stale == 0);
  for (auto& c : per_task) CHECK(c.load() == kRuns);
}

TEST_CASE("a thread index never runs two tasks at once", "[threads]") {
  for (int threads : {2, 4}) {
    ThreadPool pool(unpinned(threads));
    std::vector<std::atomic<int>> busy(static_cast<size_t>(threads));
    for (auto& b : busy) b.store(0);
    std::atomic<int> overlaps{0}, out_of_range{0};
    std::set<std::thread::id> os_threads_for_0;
    const auto caller = std::this_thread::get_id();
    std::atomic<int> zero_elsewhere{0};
    for (int rep = 0; rep < 20; ++rep) {
      pool.parallel_for(200, [&](int64_t, int th) {
        if (th < 0 || th >= threads) {
          out_of_range.fetch_add(1);
          return;
        }
        if (busy[static_cast<size_t>(th)].exchange(1) != 0) overlaps.fetch_add(1);
        if (th == 0 && std::this_thread::get_id() != caller) zero_elsewhere.fetch_add(1);
        volatile int sink = 0;
        for (int i = 0; i < 500; ++i) sink = sink + i;
        busy[static_cast<size_t>(th)].store(0);
      });
    }
    INFO("threads " << threads);
    CHECK(out_of_range.load() == 0);
    CHECK(overlaps.load() == 0);
    CHECK(zero_elsewhere.load() == 0);  // thread 0 is the caller
  }
}

TEST_CASE("a pool of one thread runs inline on the caller", "[threads]") {
  ThreadPool pool(unpinned(1));
  CHECK(pool.size() == 1);
  CHECK(pool.describe().find("1 thread") != std::string::npos);
  const auto caller = std::this_thread::get_id();
  int sum = 0, elsewhere = 0;
  pool.parallel_for(100, [&](int64_t t, int th) {
    sum += static_cast<int>(t);
    elsewhere += th != 0 || std::this_thread::get_id() != caller;
  });
  CHECK(sum == 4950);
  CHECK(elsewhere == 0);
}

TEST_CASE("sleeping workers are woken by the next run", "[threads]") {
  ThreadPool pool(unpinned(2));
  check_exactly_once(pool, 100);
  // Far beyond the ~100 us spin: the worker is in FUTEX_WAIT now.
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  // Two tasks that each wait until both have started: the run can only
  // finish if the sleeping worker wakes and takes one. Bounded, so a broken
  // wake-up fails instead of hanging.
  std::atomic<int> started{0};
  std::atomic<int> timed_out{0};
  std::set<int> threads_seen;
  std::mutex m;
  pool.parallel_for(2, [&](int64_t, int th) {
    {
      std::lock_guard<std::mutex> lock(m);
      threads_seen.insert(th);
    }
    started.fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (started.load() < 2) {
      if (std::chrono::steady_clock::now() > deadline) {
        timed_out.fetch_add(1);
        return;
      }
      std::this_thread::yield();
    }
  });
  CHECK(timed_out.load() == 0);
  CHECK(threads_seen == std::set<int>{0, 1});
  // And the caller's own futex wait: once both have started, the worker's
  // task outlasts the caller's spin, so the caller sleeps until woken. (A
  // lost wake-up here hangs; ctest's timeout reports it.)
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  started = 0;
  std::atomic<int> slow_done{0};
  pool.parallel_for(2, [&](int64_t, int th) {
    started.fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (started.load() < 2 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::yield();
    if (th != 0) std::this_thread::sleep_for(std::chrono::milliseconds(3));
    slow_done.fetch_add(1);
  });
  CHECK(slow_done.load() == 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  // The pool is destroyed here with its worker asleep: the join must not hang.
}

TEST_CASE("a slow thread takes fewer tasks", "[threads]") {
  ThreadPool pool(unpinned(2));
  std::atomic<int> by_worker{0};
  pool.parallel_for(100, [&](int64_t, int th) {
    if (th != 0) {
      by_worker.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  // The caller takes the rest while the worker sleeps through its task.
  CHECK(by_worker.load() <= 20);
}

TEST_CASE("an exception in a task reaches the caller and the pool stays usable", "[threads]") {
  for (int threads : {1, 2}) {
    ThreadPool pool(unpinned(threads));
    std::atomic<int> ran{0};
    CHECK_THROWS_WITH(pool.parallel_for(1000,
                                        [&](int64_t t, int) {
                                          ran.fetch_add(1);
                                          if (t == 10) throw std::runtime_error("task 10 failed");
                                        }),
                      "task 10 failed");
    CHECK(ran.load() >= 11);
    check_exactly_once(pool, 1000);
  }
}

TEST_CASE("describe() tells the thread count and the pinning", "[threads]") {
  AffinityGuard guard;
  {
    ThreadPool pool(unpinned(2));
    CHECK(pool.describe() == "2 threads, not pinned");
  }
  {
    ThreadPoolOptions o;
    o.n_threads = 1;
    o.pin_caller = true;
    ThreadPool pool(o);
    INFO(pool.describe());
    CHECK(pool.describe().rfind("1 thread, pinned to cores ", 0) == 0);
    check_exactly_once(pool, 10);
  }
  {
    ThreadPoolOptions o;
    o.n_threads = 2;
    ThreadPool pool(o);
    INFO(pool.describe());
    CHECK(pool.describe().rfind("2 threads, ", 0) == 0);
    if (brisk::physical_core_count() >= 2)
      CHECK(pool.describe().find(", pinned to cores ") != std::string::npos);
    check_exactly_once(pool, 100);
  }
  {
    ThreadPoolOptions o;
    o.n_threads = brisk::physical_core_count() + 1;
    ThreadPool pool(o);
    INFO(pool.describe());
    CHECK(pool.describe().find("not pinned (more threads than cores)") != std::string::npos);
    check_exactly_once(pool, 100);
  }
  {
    const int cpu = brisk::cpu_topology().cores.front().cpus.front();
    ThreadPoolOptions o;
    o.n_threads = 3;
    o.cpu_list = {cpu};
    o.pin_caller = true;
    ThreadPool pool(o);
    const std::string c = std::to_string(cpu);
    CHECK(pool.describe() == "3 threads, pinned to cpus " + c + "," + c + "," + c);
    check_exactly_once(pool, 100);
  }
  {
    ThreadPoolOptions o;
    o.n_threads = 2;
    o.cpu_list = {100000};  // no such CPU: the pool works, unpinned
    ThreadPool pool(o);
    INFO(pool.describe());
    CHECK(pool.describe().rfind("2 threads, not pinned (cannot pin to cpu 100000", 0) == 0);
    check_exactly_once(pool, 100);
  }
}

TEST_CASE("the calling thread is pinned only when asked, and given back", "[threads]") {
  AffinityGuard guard;
  cpu_set_t before, during, after;
  REQUIRE(sched_getaffinity(0, sizeof(before), &before) == 0);
  const int cpu = brisk::cpu_topology().cores.front().cpus.front();
  {
    ThreadPoolOptions o;  // pin = true: the workers are pinned, the caller is not
    o.n_threads = 2;
    o.cpu_list = {cpu};
    ThreadPool pool(o);
    INFO(pool.describe());
    CHECK(pool.describe() == "2 threads, pinned to cpus " + std::to_string(cpu) + "; calling thread not pinned");
    REQUIRE(sched_getaffinity(0, sizeof(during), &during) == 0);
    CHECK(CPU_EQUAL(&before, &during));
    check_exactly_once(pool, 100);
  }
  {
    ThreadPoolOptions o;
    o.n_threads = 2;
    o.cpu_list = {cpu};
    o.pin_caller = true;
    ThreadPool pool(o);
    REQUIRE(sched_getaffinity(0, sizeof(during), &during) == 0);
    CHECK(CPU_COUNT(&during) == 1);
    CHECK(CPU_ISSET(cpu, &during));
  }
  REQUIRE(sched_getaffinity(0, sizeof(after), &after) == 0);
  CHECK(CPU_EQUAL(&before, &after));
}

TEST_CASE("pinning the caller does not shrink later pools", "[threads]") {
  AffinityGuard guard;
  const int cores = brisk::physical_core_count();
  {
    ThreadPoolOptions o;
    o.pin_caller = true;
    ThreadPool pool(o);  // pins this thread to the first core
  }
  CHECK(brisk::physical_core_count() == cores);
  ThreadPoolOptions o;
  o.pin = false;
  ThreadPool again(o);
  CHECK(again.size() == cores);
}

namespace {

// A sparse temporary file mapped read-only: its pages enter the page cache
// only when something reads them, which mincore() shows.
struct SparseMapping {
  size_t bytes;
  uint8_t* p = nullptr;
  explicit SparseMapping(size_t n) : bytes(n) {
    char path[] = "/tmp/brisk-read-ahead-XXXXXX";
    const int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    unlink(path);
    REQUIRE(ftruncate(fd, static_cast<off_t>(n)) == 0);
    void* m = mmap(nullptr, n, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    REQUIRE(m != MAP_FAILED);
    // No readahead: a page is resident only if something read it.
    madvise(m, n, MADV_RANDOM);
    p = static_cast<uint8_t*>(m);
  }
  ~SparseMapping() { munmap(p, bytes); }
  size_t resident_pages() const {
    std::vector<unsigned char> v(bytes / 4096);
    if (mincore(p, bytes, v.data()) != 0) return 0;
    size_t n = 0;
    for (unsigned char c : v) n += c & 1;
    return n;
  }
};

}  // namespace

TEST_CASE("a worker reads the memory named for after the next run, and only that", "[threads]") {
  const size_t bytes = size_t{4} << 20;
  SparseMapping named(bytes), cleared(bytes);
  REQUIRE(named.resident_pages() == 0);
  REQUIRE(cleared.resident_pages() == 0);
  ThreadPool pool(unpinned(2));
  // Out-of-range threads (the caller is thread 0) are ignored.
  pool.read_ahead_after_next_run(0, cleared.p, bytes);
  pool.read_ahead_after_next_run(2, cleared.p, bytes);
  // A range named and then cleared is not read.
  pool.read_ahead_after_next_run(1, cleared.p, bytes);
  pool.read_ahead_after_next_run(1, nullptr, 0);
  check_exactly_once(pool, 4);
  // Time for the worker to read what it (wrongly) kept before the next run
  // would stop it.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  pool.read_ahead_after_next_run(1, named.p, bytes);
  check_exactly_once(pool, 4);
  // The worker reads after the run returns: wait for it (a liveness bound,
  // not a speed figure).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (named.resident_pages() < bytes / 4096 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  CHECK(named.resident_pages() == bytes / 4096);
  CHECK(cleared.resident_pages() == 0);
  // The hint was for that one run: later runs work as before.
  for (int i = 0; i < 100; ++i) check_exactly_once(pool, 8);
}
