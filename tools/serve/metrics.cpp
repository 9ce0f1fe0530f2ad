// SPDX-License-Identifier: MIT
#include "serve/metrics.h"

#include <cstdarg>
#include <cstdio>

#include "common.h"

namespace brisk::serve {

namespace {
constexpr double kRateWindow = 10.0;  // seconds the tokens/s gauge averages over

void line(std::string* out, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void line(std::string* out, const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  out->append(buf);
  out->push_back('\n');
}
}  // namespace

void Histogram::observe(double v) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += v;
  ++n_;
}

void Histogram::render(std::string* out, const char* name, const char* help) const {
  std::lock_guard<std::mutex> lock(mu_);
  line(out, "# HELP %s %s", name, help);
  line(out, "# TYPE %s histogram", name);
  uint64_t cum = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cum += counts_[i];
    line(out, "%s_bucket{le=\"%g\"} %llu", name, bounds_[i], static_cast<unsigned long long>(cum));
  }
  line(out, "%s_bucket{le=\"+Inf\"} %llu", name, static_cast<unsigned long long>(n_));
  line(out, "%s_sum %.6f", name, sum_);
  line(out, "%s_count %llu", name, static_cast<unsigned long long>(n_));
}

Metrics::Metrics()
    : ttft({0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}),
      step_({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}) {}

void Metrics::count_request(const std::string& endpoint, int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_[{endpoint, status}];
}

void Metrics::record_step(double seconds, uint64_t generated) {
  step_.observe(seconds);
  const double now = tools::now_seconds();
  std::lock_guard<std::mutex> lock(mu_);
  recent_.emplace_back(now, generated);
  while (!recent_.empty() && recent_.front().first < now - kRateWindow) recent_.pop_front();
}

void Metrics::set_gauges(int queue_depth, int active, int cache_entries) {
  queue_depth_ = queue_depth;
  active_ = active;
  cache_entries_ = cache_entries;
}

std::string Metrics::render() const {
  std::string out;
  const double now = tools::now_seconds();
  auto counter = [&](const char* name, const char* help, uint64_t v) {
    line(&out, "# HELP %s %s", name, help);
    line(&out, "# TYPE %s counter", name);
    line(&out, "%s %llu", name, static_cast<unsigned long long>(v));
  };
  auto gauge = [&](const char* name, const char* help, double v) {
    line(&out, "# HELP %s %s", name, help);
    line(&out, "# TYPE %s gauge", name);
    line(&out, "%s %g", name, v);
  };
  {
    std::lock_guard<std::mutex> lock(mu_);
    line(&out, "# HELP brisk_requests_total HTTP requests answered, by endpoint and status");
    line(&out, "# TYPE brisk_requests_total counter");
    for (const auto& [key, n] : requests_)
      line(&out, "brisk_requests_total{endpoint=\"%s\",status=\"%d\"} %llu", key.first.c_str(), key.second,
           static_cast<unsigned long long>(n));
    uint64_t window_tokens = 0;
    for (const auto& [t, n] : recent_)
      if (t >= now - kRateWindow) window_tokens += n;
    gauge("brisk_generation_tokens_per_second", "generated tokens per second over the last 10 s",
          static_cast<double>(window_tokens) / kRateWindow);
  }
  counter("brisk_prompt_tokens_total", "prompt tokens of admitted requests", prompt_tokens);
  counter("brisk_generated_tokens_total", "tokens generated", generated_tokens);
  counter("brisk_prompt_tokens_cached_total", "prompt tokens taken from the prefix cache", cached_tokens);
  counter("brisk_prefix_cache_lookups_total", "requests looked up in the prefix cache", cache_lookups);
  counter("brisk_prefix_cache_hits_total", "requests that reused a cached prefix", cache_hits);
  gauge("brisk_queue_depth", "requests waiting for a sequence slot", queue_depth_);
  gauge("brisk_active_sequences", "requests being processed", active_);
  gauge("brisk_prefix_cache_entries", "cached prompt prefixes", cache_entries_);
  gauge("brisk_parallel_slots", "requests processed at once at most", slots);
  step_.render(&out, "brisk_step_seconds", "duration of one engine step (one forward pass)");
  ttft.render(&out, "brisk_time_to_first_token_seconds", "from arrival to the first generated token");
  return out;
}

}  // namespace brisk::serve
