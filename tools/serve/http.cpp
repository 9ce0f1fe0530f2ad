// SPDX-License-Identifier: MIT
#include "serve/http.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <httplib.h>
#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <random>

#include "common.h"

namespace brisk::serve {

using nlohmann::json;

namespace {

// What the access log line of the request being handled on this thread says;
// httplib calls the logger on the handler's thread once the response is out.
struct AccessRecord {
  std::shared_ptr<Job> job;
  std::string prompt_text;
  std::string error;
};
thread_local AccessRecord t_access;

std::string random_id(const char* prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(rng()));
  return std::string(prefix) + buf;
}

json error_body(const std::string& message, const std::string& type, const std::string& param,
                const std::string& code = "") {
  json e = {{"message", message}, {"type", type}, {"param", nullptr}, {"code", nullptr}};
  if (!param.empty()) e["param"] = param;
  if (!code.empty()) e["code"] = code;
  return json{{"error", e}};
}

void send_error(httplib::Response& res, int status, const std::string& message, const std::string& type,
                const std::string& param = "", const std::string& code = "") {
  res.status = status;
  res.set_content(dump_json(error_body(message, type, param, code)), "application/json");
  t_access.error = message;
}

// Compares in time that depends only on the key's length, not on where the
// first difference is.
bool same_secret(const std::string& given, const std::string& key) {
  unsigned diff = given.size() == key.size() ? 0u : 1u;
  for (size_t i = 0; i < key.size(); ++i)
    diff |= static_cast<unsigned char>(i < given.size() ? given[i] : 0) ^ static_cast<unsigned char>(key[i]);
  return diff == 0;
}

bool authorized(const ServerState& st, const httplib::Request& req, httplib::Response& res) {
  if (st.api_key.empty()) return true;
  const std::string h = req.get_header_value("Authorization");
  const std::string prefix = "Bearer ";
  if (h.compare(0, prefix.size(), prefix) == 0 && same_secret(h.substr(prefix.size()), st.api_key)) return true;
  send_error(res, 401, "invalid or missing API key (Authorization: Bearer KEY)", "authentication_error", "",
             "invalid_api_key");
  return false;
}

int port_of(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port);
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(a).sin6_port);
  return -1;
}

// The socket of this request (cpp-httplib does not expose it): the open
// descriptor whose local and peer ports are the request's. The scheduler
// watches it for a hang-up between steps.
int find_client_socket(const httplib::Request& req) {
  DIR* dir = ::opendir("/proc/self/fd");
  if (!dir) return -1;
  int found = -1;
  while (dirent* d = ::readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(d->d_name, &end, 10);
    if (*end != '\0' || end == d->d_name) continue;
    sockaddr_storage local{}, peer{};
    socklen_t ll = sizeof local, pl = sizeof peer;
    if (::getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&local), &ll) != 0) continue;
    if (port_of(local) != req.local_port) continue;
    if (::getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&peer), &pl) != 0) continue;
    if (port_of(peer) != req.remote_port) continue;
    char addr[INET6_ADDRSTRLEN] = "";
    if (peer.ss_family == AF_INET)
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in&>(peer).sin_addr, addr, sizeof addr);
    else
      ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6&>(peer).sin6_addr, addr, sizeof addr);
    if (req.remote_addr != addr) continue;
    found = static_cast<int>(fd);
    break;
  }
  ::closedir(dir);
  return found;
}

bool hung_up(int fd) {
  if (fd < 0) return false;
  pollfd p{fd, POLLRDHUP, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

json usage_of(const Job& job) {
  const int n = static_cast<int>(job.prompt.size());
  return json{{"prompt_tokens", n},
              {"completion_tokens", job.completion_tokens},
              {"total_tokens", n + job.completion_tokens},
              {"prompt_tokens_details", {{"cached_tokens", job.cached_tokens}}}};
}

json chunk(const ServerState& st, const Job& job, const json& choice) {
  json c = {{"id", job.id},
            {"object", job.chat ? "chat.completion.chunk" : "text_completion"},
            {"created", st.created},
            {"model", st.model_id},
            {"choices", json::array()}};
  if (!choice.is_null()) c["choices"].push_back(choice);
  return c;
}

json delta_choice(const Job& job, const std::string& text, const char* finish) {
  json choice = {{"index", 0}, {"finish_reason", finish ? json(finish) : json(nullptr)}};
  if (job.chat) {
    choice["delta"] = text.empty() && finish ? json::object() : json{{"content", text}};
    choice["logprobs"] = nullptr;
  } else {
    choice["text"] = text;
    choice["logprobs"] = nullptr;
  }
  return choice;
}

std::string sse(const json& j) { return "data: " + dump_json(j) + "\n\n"; }

void answer_whole(ServerState& st, const std::shared_ptr<Job>& job, httplib::Response& res) {
  std::unique_lock<std::mutex> lock(job->mu);
  while (!job->done) {
    job->cv.wait_for(lock, std::chrono::milliseconds(100));
    if (!job->done && hung_up(job->client_fd)) job->cancel = true;
  }
  if (job->error_status) {
    return send_error(res, job->error_status, job->error_message,
                      job->error_status >= 500 ? "server_error" : job->error_type);
  }
  json choice = {{"index", 0}, {"finish_reason", job->finish_reason}, {"logprobs", nullptr}};
  if (job->chat) choice["message"] = {{"role", "assistant"}, {"content", job->out}};
  else choice["text"] = job->out;
  json body = {{"id", job->id},
               {"object", job->chat ? "chat.completion" : "text_completion"},
               {"created", st.created},
               {"model", st.model_id},
               {"choices", json::array({choice})},
               {"usage", usage_of(*job)}};
  res.status = 200;
  res.set_content(dump_json(body), "application/json");
}

void answer_stream(ServerState& st, const std::shared_ptr<Job>& job, httplib::Response& res) {
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");  // nginx: pass events on at once
  auto started = std::make_shared<bool>(false);
  ++st.in_flight;
  res.set_chunked_content_provider(
      "text/event-stream",
      [&st, job, started](size_t, httplib::DataSink& sink) {
        auto write = [&](const std::string& s) {
          if (sink.write(s.data(), s.size())) return true;
          job->cancel = true;
          return false;
        };
        if (!*started) {
          *started = true;
          if (job->chat) {
            json c = chunk(st, *job, {{"index", 0}, {"delta", {{"role", "assistant"}, {"content", ""}}},
                                      {"logprobs", nullptr}, {"finish_reason", nullptr}});
            if (!write(sse(c))) return false;
          }
        }
        std::unique_lock<std::mutex> lock(job->mu);
        job->cv.wait_for(lock, std::chrono::milliseconds(100), [&] { return job->done || !job->out.empty(); });
        std::string text;
        text.swap(job->out);
        const bool done = job->done;
        lock.unlock();
        if (!text.empty() && !write(sse(chunk(st, *job, delta_choice(*job, text, nullptr))))) return false;
        if (!done) {
          if (hung_up(job->client_fd)) job->cancel = true;
          return !job->cancel;
        }
        std::string tail;
        if (job->error_status) {
          tail = sse(error_body(job->error_message, job->error_type, ""));
          t_access.error = job->error_message;
        } else {
          tail = sse(chunk(st, *job, delta_choice(*job, "", job->finish_reason.c_str())));
          if (job->include_usage) {
            json u = chunk(st, *job, nullptr);
            u["usage"] = usage_of(*job);
            tail += sse(u);
          }
        }
        tail += "data: [DONE]\n\n";
        if (!write(tail)) return false;
        sink.done();
        return true;
      },
      [&st, job](bool success) {
        if (!success) job->cancel = true;
        --st.in_flight;
      });
}

void handle_completion(ServerState& st, const httplib::Request& req, httplib::Response& res, bool chat) {
  t_access = AccessRecord{};
  if (st.phase != Phase::ready) {
    res.set_header("Retry-After", "1");
    return send_error(res, 503, st.phase == Phase::loading ? "the model is still loading" : "the server is shutting down",
                      "server_error");
  }
  if (!authorized(st, req, res)) return;
  auto job = std::make_shared<Job>();
  std::string prompt_text;
  RequestError err;
  if (!parse_request(req.body, chat, st.model, st.limits, job.get(), &prompt_text, &err))
    return send_error(res, err.status, err.message, err.type, err.param);
  job->id = random_id(chat ? "chatcmpl-" : "cmpl-");
  job->t_arrival = tools::now_seconds();
  job->deadline = st.timeout > 0 ? job->t_arrival + st.timeout : 0;
  job->client_fd = find_client_socket(req);
  t_access.job = job;
  if (st.log_prompts) t_access.prompt_text = prompt_text;
  switch (st.scheduler->submit(job)) {
    case Scheduler::Submit::queue_full:
      res.set_header("Retry-After", "1");
      return send_error(res, 503, "the server is busy (its request queue is full); retry later", "server_error");
    case Scheduler::Submit::draining:
      res.set_header("Retry-After", "1");
      return send_error(res, 503, "the server is shutting down", "server_error");
    case Scheduler::Submit::ok:
      break;
  }
  if (job->stream) return answer_stream(st, job, res);
  ++st.in_flight;
  answer_whole(st, job, res);
  --st.in_flight;
}

const char* endpoint_of(const std::string& path) {
  static const char* kKnown[] = {"/v1/chat/completions", "/v1/completions", "/v1/models", "/health", "/metrics"};
  for (const char* k : kKnown)
    if (path == k) return k;
  return "other";
}

void access_log(ServerState& st, const httplib::Request& req, const httplib::Response& res) {
  AccessRecord rec = std::move(t_access);
  t_access = AccessRecord{};
  const char* endpoint = endpoint_of(req.path);
  st.metrics.count_request(endpoint, res.status);
  if (std::string(endpoint) == "/health" || std::string(endpoint) == "/metrics") return;
  json f = {{"method", req.method}, {"path", endpoint}, {"status", res.status}, {"remote", req.remote_addr}};
  if (rec.job) {
    Job& j = *rec.job;
    std::lock_guard<std::mutex> lock(j.mu);
    const double now = tools::now_seconds();
    f["id"] = j.id;
    f["stream"] = j.stream;
    f["prompt_tokens"] = j.prompt.size();
    f["cached_tokens"] = j.cached_tokens;
    f["completion_tokens"] = j.completion_tokens;
    if (j.t_first > 0) f["ttft_ms"] = std::round((j.t_first - j.t_arrival) * 1e4) / 10;
    f["total_ms"] = std::round((now - j.t_arrival) * 1e4) / 10;
    if (!j.finish_reason.empty()) f["finish_reason"] = j.finish_reason;
    if (j.error_status) f["outcome"] = j.error_type;
    else if (j.cancel) f["outcome"] = "cancelled";  // the scheduler ends it before its next step
    if (j.t_first > 0) st.metrics.ttft.observe(j.t_first - j.t_arrival);
    if (st.log_prompts) {
      f["prompt"] = rec.prompt_text;
      f["completion"] = j.out;
    }
  }
  if (!rec.error.empty()) f["error"] = rec.error;
  st.log->info("request", f);
}

}  // namespace

void install_routes(httplib::Server& svr, ServerState& st) {
  svr.Post("/v1/chat/completions",
           [&st](const httplib::Request& req, httplib::Response& res) { handle_completion(st, req, res, true); });
  svr.Post("/v1/completions",
           [&st](const httplib::Request& req, httplib::Response& res) { handle_completion(st, req, res, false); });
  svr.Get("/v1/models", [&st](const httplib::Request& req, httplib::Response& res) {
    t_access = AccessRecord{};
    if (!authorized(st, req, res)) return;
    json m = {{"id", st.model_id}, {"object", "model"}, {"created", st.created}, {"owned_by", "brisk"}};
    res.set_content(dump_json(json{{"object", "list"}, {"data", json::array({m})}}), "application/json");
  });
  svr.Get("/health", [&st](const httplib::Request&, httplib::Response& res) {
    const Phase p = st.phase;
    res.status = p == Phase::ready ? 200 : 503;
    const char* s = p == Phase::ready ? "ok" : p == Phase::loading ? "loading" : "shutting down";
    res.set_content(dump_json(json{{"status", s}}), "application/json");
  });
  svr.Get("/metrics", [&st](const httplib::Request&, httplib::Response& res) {
    res.set_content(st.metrics.render(), "text/plain; version=0.0.4");
  });
  svr.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    const int s = res.status;
    const char* what = s == 404   ? "no such endpoint"
                       : s == 413 ? "the request body is too large"
                       : s == 405 ? "method not allowed"
                       : s >= 500 ? "internal error"
                                  : "bad request";
    res.set_content(dump_json(error_body(what, s >= 500 ? "server_error" : "invalid_request_error", "")),
                    "application/json");
    return httplib::Server::HandlerResponse::Handled;
  }));
  svr.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what += std::string(": ") + e.what();
    } catch (...) {
    }
    send_error(res, 500, what, "server_error");
  });
  svr.set_logger([&st](const httplib::Request& req, const httplib::Response& res) { access_log(st, req, res); });
}

}  // namespace brisk::serve
