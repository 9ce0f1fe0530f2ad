// SPDX-License-Identifier: MIT
#include "serve/scheduler.h"

#include <algorithm>
#include <poll.h>

#include <stdexcept>

#include "common.h"

namespace brisk::serve {

namespace {
std::string last_error(brisk_status st) {
  return std::string(brisk_last_error()) + " (" + brisk_status_name(st) + ")";
}
}  // namespace

Scheduler::Scheduler(brisk_engine* engine, const SchedulerConfig& config, Metrics& metrics, Logger& log)
    : engine_(engine), cfg_(config), metrics_(metrics), log_(log), cache_(static_cast<size_t>(config.cache_slots)) {}

Scheduler::~Scheduler() {
  for (auto& j : active_) brisk_sequence_free(j->seq);
  cache_.clear();
}

Scheduler::Submit Scheduler::submit(const std::shared_ptr<Job>& job) {
  std::lock_guard<std::mutex> lock(mu_);
  if (draining_) return Submit::draining;
  const int free_slots = std::max(0, cfg_.parallel - busy_slots_);
  if (static_cast<int>(queue_.size()) >= cfg_.max_queue + free_slots) return Submit::queue_full;
  queue_.push_back(job);
  cv_.notify_all();
  return Submit::ok;
}

void Scheduler::drain() {
  std::lock_guard<std::mutex> lock(mu_);
  draining_ = true;
}

void Scheduler::abort_all() {
  std::lock_guard<std::mutex> lock(mu_);
  aborting_ = true;
  cv_.notify_all();
}

void Scheduler::stop() {
  std::lock_guard<std::mutex> lock(mu_);
  stopping_ = true;
  cv_.notify_all();
}

void Scheduler::fail(const std::shared_ptr<Job>& job, int status, const char* type, const std::string& message) {
  metrics_.generated_tokens += static_cast<uint64_t>(job->completion_tokens);
  if (job->seq) {
    brisk_sequence_free(job->seq);
    job->seq = nullptr;
  }
  std::lock_guard<std::mutex> lock(job->mu);
  job->error_status = status;
  job->error_type = type;
  job->error_message = message;
  job->done = true;
  job->cv.notify_all();
}

int Scheduler::on_token(void* user_data, int32_t token, const char* text, size_t len) {
  Job& job = *static_cast<Job*>(user_data);
  std::string emit;
  const bool stop = job.matcher.push(std::string_view(text, len), &emit);
  {
    std::lock_guard<std::mutex> lock(job.mu);
    if (token >= 0) {
      ++job.completion_tokens;
      if (job.t_first == 0) job.t_first = tools::now_seconds();
    }
    if (!emit.empty()) {
      job.out += emit;
      job.cv.notify_all();
    }
  }
  return stop || job.cancel.load() ? 1 : 0;
}

void Scheduler::begin_generation(Job& job) {
  brisk_sampler_options so;
  brisk_sampler_options_init(&so);
  so.temperature = job.temperature;
  so.top_p = job.top_p;
  so.top_k = 0;  // OpenAI's API has temperature and top_p only
  so.min_p = 0;
  so.seed = job.seed;
  so.presence_penalty = job.presence_penalty;
  so.frequency_penalty = job.frequency_penalty;
  brisk_generate_options go;
  brisk_generate_options_init(&go);
  go.max_tokens = job.max_tokens;
  go.stop_at_eos = 1;
  go.token_fn = on_token;
  go.token_user_data = &job;
  job.caching = false;
  const brisk_status st = brisk_sequence_generate(job.seq, &so, &go);
  if (st != BRISK_OK) throw std::runtime_error(last_error(st));
}

// A request whose prompt begins like one being read into the prefix cache
// right now (or about to be) waits until that read is done and then forks
// it, instead of reading the same tokens beside it: a burst of requests that
// share a system prompt reads it once, not once per request. Only a share
// that start() would fork from, and that beats what the cache already
// holds, is worth the wait.
bool Scheduler::waits_for_prefix(const Job& job, const std::vector<std::shared_ptr<Job>>& admitting) const {
  const size_t min_cached = static_cast<size_t>(cfg_.min_cached);
  if (cfg_.cache_slots == 0 || job.prompt.size() <= min_cached) return false;
  const size_t have = cache_.usable(job.prompt);
  auto worth = [&](const Job& reader) {
    const size_t n = std::min(common_prefix(job.prompt, reader.prompt), job.prompt.size() - 1);
    return n >= min_cached && n * 4 >= reader.prompt.size() && n > have + min_cached;
  };
  for (const auto& j : active_)
    if (j->caching && worth(*j)) return true;
  // Requests admitted in this round read their prompts into the cache too.
  for (const auto& j : admitting)
    if (worth(*j)) return true;
  return false;
}

// Admits a request: a fork of the best cached prefix, or a fresh sequence.
void Scheduler::start(const std::shared_ptr<Job>& job) {
  size_t reuse = 0;
  const PrefixCache::Entry* hit = nullptr;
  if (cfg_.cache_slots > 0) {
    ++metrics_.cache_lookups;
    hit = cache_.lookup(job->prompt, &reuse);
    // A fork copies all of the entry's rows: worth it when a good share of
    // them is kept (copying is far cheaper than computing, not free).
    if (hit && (reuse < static_cast<size_t>(cfg_.min_cached) || reuse * 4 < hit->tokens.size())) hit = nullptr;
  }
  brisk_status st;
  if (hit) {
    st = brisk_sequence_fork(hit->seq, &job->seq);
    if (st == BRISK_OK && reuse < hit->tokens.size()) st = brisk_sequence_truncate(job->seq, static_cast<uint32_t>(reuse));
  } else {
    reuse = 0;
    st = brisk_sequence_create(engine_, &job->seq);
  }
  const size_t rest = job->prompt.size() - reuse;
  if (st == BRISK_OK && rest > 0) st = brisk_sequence_add_tokens(job->seq, job->prompt.data() + reuse, rest);
  if (st != BRISK_OK) return fail(job, 500, "server_error", last_error(st));
  if (hit) {
    ++metrics_.cache_hits;
    metrics_.cached_tokens += reuse;
  }
  metrics_.prompt_tokens += job->prompt.size();
  {
    std::lock_guard<std::mutex> lock(job->mu);
    job->cached_tokens = static_cast<int>(reuse);
  }
  // A prompt worth caching is first read on its own; once read, the sequence
  // stays in the cache and the request continues on a fork of it.
  job->caching = cfg_.cache_slots > 0 && rest > 0 && job->prompt.size() >= static_cast<size_t>(cfg_.min_cached);
  if (!job->caching) begin_generation(*job);
}

void Scheduler::promote_to_cache(Job& job) {
  if (cache_.full()) cache_.evict_one();
  brisk_sequence* child = nullptr;
  if (brisk_sequence_fork(job.seq, &child) == BRISK_OK) {
    cache_.insert(job.prompt, job.seq);
    job.seq = child;
  }
  begin_generation(job);
}

void Scheduler::finish(const std::shared_ptr<Job>& job) {
  const brisk_stop_reason why = brisk_sequence_stop_reason(job->seq);
  brisk_sequence_free(job->seq);
  job->seq = nullptr;
  std::string rest = job->matcher.flush();
  metrics_.generated_tokens += static_cast<uint64_t>(job->completion_tokens);
  std::lock_guard<std::mutex> lock(job->mu);
  job->out += rest;
  if (job->cancel) {
    job->error_status = 499;
    job->error_type = "cancelled";
    job->error_message = "the client closed the connection";
  } else {
    job->finish_reason = why == BRISK_STOP_EOS || job->matcher.stopped() ? "stop" : "length";
  }
  job->done = true;
  job->cv.notify_all();
}

// Clients that hung up, cancelled jobs and deadlines: ended before the next
// step, so a gone client costs at most the step in flight.
void Scheduler::check_clients() {
  std::vector<pollfd> fds(active_.size());
  for (size_t i = 0; i < active_.size(); ++i) fds[i] = pollfd{active_[i]->client_fd, POLLRDHUP, 0};
  if (!fds.empty()) ::poll(fds.data(), fds.size(), 0);
  const double now = tools::now_seconds();
  for (size_t i = 0; i < active_.size(); ++i) {
    Job& j = *active_[i];
    if (j.client_fd >= 0 && (fds[i].revents & (POLLRDHUP | POLLHUP | POLLERR))) j.cancel = true;
    if (j.cancel) {
      fail(active_[i], 499, "cancelled", "the client closed the connection");
    } else if (aborting_) {
      fail(active_[i], 503, "server_error", "the server is shutting down");
    } else if (j.deadline > 0 && now > j.deadline) {
      fail(active_[i], 504, "timeout", "the request took longer than the server's --timeout");
    }
  }
  active_.erase(std::remove_if(active_.begin(), active_.end(), [](const auto& j) { return j->seq == nullptr; }),
                active_.end());
}

void Scheduler::run() {
  for (;;) {
    std::vector<std::shared_ptr<Job>> admit;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (active_.empty())
        cv_.wait(lock, [&] { return stopping_ || aborting_ || !queue_.empty(); });
      const double now = tools::now_seconds();
      for (auto it = queue_.begin(); it != queue_.end();) {
        Job& j = **it;
        if (aborting_ || j.cancel || (j.deadline > 0 && now > j.deadline)) {
          auto job = *it;
          it = queue_.erase(it);
          lock.unlock();
          if (aborting_) fail(job, 503, "server_error", "the server is shutting down");
          else if (job->cancel) fail(job, 499, "cancelled", "the client closed the connection");
          else fail(job, 504, "timeout", "the request waited longer than the server's --timeout");
          lock.lock();
          it = queue_.begin();
        } else {
          ++it;
        }
      }
      for (auto it = queue_.begin();
           it != queue_.end() && static_cast<int>(active_.size() + admit.size()) < cfg_.parallel;) {
        if (waits_for_prefix(**it, admit)) {
          ++it;
          continue;
        }
        admit.push_back(*it);
        it = queue_.erase(it);
      }
      busy_slots_ = static_cast<int>(active_.size() + admit.size());
      if (stopping_ && queue_.empty() && active_.empty() && admit.empty()) break;
      metrics_.set_gauges(static_cast<int>(queue_.size()), static_cast<int>(active_.size() + admit.size()),
                          static_cast<int>(cache_.size()));
    }
    for (auto& job : admit) {
      try {
        start(job);
        if (job->seq) active_.push_back(job);
      } catch (const std::exception& e) {
        fail(job, 500, "server_error", e.what());
      }
    }
    check_clients();
    if (active_.empty()) {
      std::lock_guard<std::mutex> lock(mu_);
      busy_slots_ = 0;
      metrics_.set_gauges(static_cast<int>(queue_.size()), 0, static_cast<int>(cache_.size()));
      continue;
    }

    const double t0 = tools::now_seconds();
    uint64_t generated = 0;
    for (auto& j : active_) generated -= static_cast<uint64_t>(j->completion_tokens);
    uint32_t n_active = 0;
    const brisk_status st = brisk_engine_step(engine_, &n_active);
    for (auto& j : active_) generated += static_cast<uint64_t>(j->completion_tokens);
    if (st != BRISK_OK) {
      log_.error("engine_step_failed", {{"error", last_error(st)}});
      for (auto& j : active_) fail(j, 500, "server_error", "engine step failed: " + last_error(st));
      active_.clear();
      continue;
    }
    metrics_.record_step(tools::now_seconds() - t0, generated);

    for (auto& job : active_) {
      const brisk_sequence_state s = brisk_sequence_get_state(job->seq);
      try {
        if (job->caching && s == BRISK_SEQ_IDLE) promote_to_cache(*job);
      } catch (const std::exception& e) {
        fail(job, 500, "server_error", e.what());
        continue;
      }
      if (brisk_sequence_get_state(job->seq) == BRISK_SEQ_FINISHED) finish(job);
    }
    active_.erase(std::remove_if(active_.begin(), active_.end(), [](const auto& j) { return j->seq == nullptr; }),
                  active_.end());
    std::lock_guard<std::mutex> lock(mu_);
    busy_slots_ = static_cast<int>(active_.size());
    metrics_.set_gauges(static_cast<int>(queue_.size()), static_cast<int>(active_.size()),
                        static_cast<int>(cache_.size()));
  }
}

}  // namespace brisk::serve
