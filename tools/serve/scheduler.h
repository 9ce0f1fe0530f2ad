// SPDX-License-Identifier: MIT
// The scheduler thread: the only thread that touches the engine. It admits
// queued requests as sequences (through the prefix cache), runs one engine
// step at a time over all of them (continuous batching: sequences join and
// leave between steps), hands out text, and ends requests whose client went
// away or whose time ran out before the next step.
#pragma once
#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "brisk/brisk.h"
#include "serve/job.h"
#include "serve/log.h"
#include "serve/metrics.h"
#include "serve/prefix_cache.h"

namespace brisk::serve {

struct SchedulerConfig {
  int parallel = 1;      // requests processed at once (engine slots besides the cache's)
  int cache_slots = 0;   // slots for the prefix cache; 0: no cache
  int max_queue = 64;    // requests waiting for a slot at most
  int min_cached = 16;   // reuse a cached prefix only from this many tokens on
};

class Scheduler {
 public:
  Scheduler(brisk_engine* engine, const SchedulerConfig& config, Metrics& metrics, Logger& log);
  ~Scheduler();

  enum class Submit { ok, queue_full, draining };
  Submit submit(const std::shared_ptr<Job>& job);
  // The scheduler thread's body; returns after stop() once nothing is left.
  void run();
  // New requests are refused from now on; queued and running ones finish.
  void drain();
  // Ends every queued and running request with an error (shutdown deadline).
  void abort_all();
  // run() returns as soon as it is idle.
  void stop();

 private:
  bool waits_for_prefix(const Job& job, const std::vector<std::shared_ptr<Job>>& admitting) const;
  void start(const std::shared_ptr<Job>& job);
  void begin_generation(Job& job);
  void promote_to_cache(Job& job);
  void finish(const std::shared_ptr<Job>& job);
  void fail(const std::shared_ptr<Job>& job, int status, const char* type, const std::string& message);
  void check_clients();
  static int on_token(void* user_data, int32_t token, const char* text, size_t len);

  brisk_engine* engine_;
  SchedulerConfig cfg_;
  Metrics& metrics_;
  Logger& log_;
  PrefixCache cache_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  // Slots holding a request (running or being started), as of the
  // scheduler's last look under mu_: queued requests that will find a free
  // slot at once do not count against max_queue.
  int busy_slots_ = 0;
  bool draining_ = false, stopping_ = false;
  std::atomic<bool> aborting_{false};

  std::vector<std::shared_ptr<Job>> active_;  // scheduler thread only
};

}  // namespace brisk::serve
