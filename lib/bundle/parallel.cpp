// SPDX-License-Identifier: MIT
#include "bundle/parallel.h"

#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace brisk::bundle {

void parallel_for(size_t n, int threads, const Job& job, uint64_t total, double f0, double f1,
                  const std::string& what, const std::function<void(size_t, TaskState&)>& body) {
  if (n == 0) return;
  TaskState st;
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::condition_variable cv;
  size_t finished_workers = 0;
  std::exception_ptr error;
  const size_t n_workers = std::min<size_t>(n, static_cast<size_t>(std::max(1, threads)));
  auto worker = [&] {
    try {
      for (size_t i; !st.stop.load(std::memory_order_relaxed) && (i = next.fetch_add(1)) < n;) body(i, st);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      if (!error) error = std::current_exception();
      st.stop = true;
    }
    std::lock_guard<std::mutex> lock(mu);
    ++finished_workers;
    cv.notify_one();
  };
  std::vector<std::thread> pool;
  pool.reserve(n_workers);
  for (size_t t = 0; t < n_workers; ++t) pool.emplace_back(worker);
  {
    std::unique_lock<std::mutex> lock(mu);
    while (finished_workers < n_workers) {
      cv.wait_for(lock, std::chrono::milliseconds(50));
      lock.unlock();
      try {
        job.check_cancel();
        if (total) job.report(f0 + (f1 - f0) * static_cast<double>(st.done.load()) / static_cast<double>(total), what);
      } catch (...) {
        lock.lock();
        if (!error) error = std::current_exception();
        st.stop = true;
        continue;
      }
      lock.lock();
    }
  }
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  job.report(f1, what);
}

}  // namespace brisk::bundle
