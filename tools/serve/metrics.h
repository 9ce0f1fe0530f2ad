// SPDX-License-Identifier: MIT
// Counters, gauges and histograms for GET /metrics (Prometheus text format).
#pragma once
#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace brisk::serve {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1) {}
  void observe(double v);
  void render(std::string* out, const char* name, const char* help) const;

 private:
  mutable std::mutex mu_;
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative
  double sum_ = 0;
  uint64_t n_ = 0;
};

class Metrics {
 public:
  Metrics();
  void count_request(const std::string& endpoint, int status);
  // One engine step: its duration and the tokens it generated (for the
  // tokens/s gauge; generated_tokens is counted per finished request).
  void record_step(double seconds, uint64_t generated);
  void set_gauges(int queue_depth, int active, int cache_entries);

  std::atomic<uint64_t> prompt_tokens{0}, generated_tokens{0}, cached_tokens{0};
  std::atomic<uint64_t> cache_lookups{0}, cache_hits{0};
  std::atomic<int> slots{0};
  Histogram ttft;

  std::string render() const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  std::deque<std::pair<double, uint64_t>> recent_;  // (time, tokens) of steps in the last window
  std::atomic<int> queue_depth_{0}, active_{0}, cache_entries_{0};
  Histogram step_;
};

}  // namespace brisk::serve
