// SPDX-License-Identifier: MIT
// brisk serve: an OpenAI-compatible HTTP server over one engine. HTTP
// threads parse and validate requests; one scheduler thread owns the engine
// and steps all requests' sequences together (continuous batching).
#include <httplib.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <cxxopts.hpp>
#include <memory>
#include <string>
#include <thread>

#include "brisk/brisk.h"
#include "commands.h"
#include "common.h"
#include "load_options.h"
#include "serve/http.h"
#include "serve/scheduler.h"

namespace brisk::tools {

namespace {

using serve::Phase;

// Waits for SIGINT/SIGTERM (blocked in every thread, taken here with sigwait).
struct SignalWaiter {
  std::mutex mu;
  std::condition_variable cv;
  int signal = 0;
};

std::string base_name(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  const size_t dot = name.rfind('.');
  return dot == std::string::npos || dot == 0 ? name : name.substr(0, dot);
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

int cmd_serve(int argc, char** argv) {
  cxxopts::Options opts("brisk serve", "An OpenAI-compatible HTTP server (chat and text completions) on one engine.");
  // clang-format off
  opts.add_options()
    ("host", "address to listen on", cxxopts::value<std::string>()->default_value("127.0.0.1"))
    ("port", "port to listen on (0: any free port, printed at start)", cxxopts::value<int>()->default_value("8080"))
    ("parallel", "requests processed at once, or 'auto' (most the memory plan allows, at most 32)", cxxopts::value<std::string>()->default_value("4"))
    ("c,ctx-size", "context per request: prompt + completion (0 = model's, at most 4096)", cxxopts::value<int>()->default_value("0"))
    ("b,batch-size", "most tokens per engine step (long prompts are read in chunks of this)", cxxopts::value<int>()->default_value("256"))
    ("cache-type-k", "KV cache type for keys: auto, f32, f16, q8_0, q4_0", cxxopts::value<std::string>()->default_value("auto"))
    ("cache-type-v", "KV cache type for values: auto, f32, f16, q8_0, q4_0", cxxopts::value<std::string>()->default_value("auto"))
    ("cache-slots", "sequences kept for the shared-prefix cache (0 = no cache)", cxxopts::value<int>()->default_value("4"))
    ("chat-template", "chat format when the model has none: llama2, llama3, chatml, mistral, phi3", cxxopts::value<std::string>()->default_value(""))
    ("alias", "model id shown in /v1/models and responses (default: the file name)", cxxopts::value<std::string>()->default_value(""))
    ("api-key", "require 'Authorization: Bearer KEY' on /v1/*", cxxopts::value<std::string>()->default_value(""))
    ("api-key-file", "read the API key from a file", cxxopts::value<std::string>()->default_value(""))
    ("max-queue", "requests waiting for a slot at most; more get 503", cxxopts::value<int>()->default_value("64"))
    ("timeout", "seconds a request may take, queueing included (0 = no limit)", cxxopts::value<double>()->default_value("600"))
    ("max-tokens", "largest max_tokens a request may ask for", cxxopts::value<int>()->default_value("4096"))
    ("max-body", "largest request body, bytes (K/M suffixes)", cxxopts::value<std::string>()->default_value("4M"))
    ("shutdown-timeout", "seconds SIGTERM/SIGINT waits for requests in flight", cxxopts::value<double>()->default_value("30"))
    ("log-format", "json or text", cxxopts::value<std::string>()->default_value("json"))
    ("log-prompts", "include prompts and completions in the request log")
    ("no-pin", "do not pin threads to cores");
  // clang-format on
  add_model_option(opts, "model (GGUF)");
  add_threads_option(opts);
  add_load_options(opts);
  cxxopts::ParseResult args;
  int exit_code = 0;
  if (!parse_command("serve", opts, argc, argv, &args, &exit_code)) return exit_code;
  auto usage_error = [](const std::string& msg) { return tools::usage_error("serve", msg); };
  if (!args.count("model")) return usage_error("no model given (-m MODEL.gguf)");
  const std::string model_path = args["model"].as<std::string>();
  const std::string host = args["host"].as<std::string>();
  const int port = args["port"].as<int>();
  const std::string parallel_arg = args["parallel"].as<std::string>();
  const int n_ctx = args["ctx-size"].as<int>(), n_batch = args["batch-size"].as<int>();
  const int n_threads = static_cast<int>(threads_arg(args)), cache_slots = args["cache-slots"].as<int>();
  const int max_queue = args["max-queue"].as<int>(), max_tokens = args["max-tokens"].as<int>();
  const double timeout = args["timeout"].as<double>(), shutdown_timeout = args["shutdown-timeout"].as<double>();
  const std::string log_format = args["log-format"].as<std::string>();
  int parallel = 0;
  if (parallel_arg != "auto") {
    try {
      size_t used = 0;
      parallel = std::stoi(parallel_arg, &used);
      if (used != parallel_arg.size()) parallel = 0;
    } catch (const std::exception&) {
      parallel = 0;
    }
    if (parallel < 1 || parallel > 1024) return usage_error("--parallel takes a number from 1 to 1024 or 'auto'");
  }
  if (port < 0 || port > 65535) return usage_error("--port must be 0..65535");
  if (n_ctx < 0 || n_batch <= 0 || n_threads < 0 || cache_slots < 0 || cache_slots > 1024 || max_queue < 0 ||
      max_tokens < 1 || !(timeout >= 0) || !(shutdown_timeout >= 0))
    return usage_error("-c, -t, --cache-slots, --max-queue, --timeout must not be negative; -b, --max-tokens must be positive");
  if (log_format != "json" && log_format != "text") return usage_error("--log-format is json or text");
  brisk_model_options mo;
  brisk_model_options_init(&mo);
  std::string plan_cache;
  if (!apply_load_options(args, &mo, &plan_cache)) return usage_error("--plan must be auto, fixed or measure");
  uint64_t max_body = 0;
  if (!parse_size(args["max-body"].as<std::string>(), &max_body)) return usage_error("bad --max-body");
  int32_t cache_k = 0, cache_v = 0;
  if (!parse_type(args["cache-type-k"].as<std::string>(), &cache_k) ||
      !parse_type(args["cache-type-v"].as<std::string>(), &cache_v))
    return usage_error("unknown cache type (auto, f32, f16, q8_0, q4_0)");
  std::string api_key = args["api-key"].as<std::string>();
  if (!args["api-key-file"].as<std::string>().empty()) {
    if (!read_file("serve", args["api-key-file"].as<std::string>(), &api_key)) return 1;
    api_key = trim(api_key);
    if (api_key.empty()) return usage_error("the --api-key-file is empty");
  }

  serve::Logger log(log_format == "json");
  serve::ServerState state;
  state.log = &log;
  state.api_key = api_key;
  state.log_prompts = args.count("log-prompts") > 0;
  state.timeout = timeout;
  state.created = static_cast<long long>(std::time(nullptr));
  state.model_id = args["alias"].as<std::string>().empty() ? base_name(model_path) : args["alias"].as<std::string>();

  // Signals go to the waiter thread only; a dead client's socket must not kill us.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  SignalWaiter waiter;
  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&sigs, &sig);
    std::lock_guard<std::mutex> lock(waiter.mu);
    waiter.signal = sig;
    waiter.cv.notify_all();
  });
  auto stop_signal_thread = [&] {
    {
      std::lock_guard<std::mutex> lock(waiter.mu);
      if (waiter.signal == 0) pthread_kill(signal_thread.native_handle(), SIGTERM);
    }
    signal_thread.join();
  };

  // Listen first, so /health answers 503 while the model loads.
  httplib::Server svr;
  const int n_workers = (parallel > 0 ? parallel : 32) + max_queue + 8;
  svr.new_task_queue = [n_workers] { return new httplib::ThreadPool(static_cast<size_t>(n_workers)); };
  svr.set_payload_max_length(static_cast<size_t>(max_body));
  svr.set_read_timeout(30, 0);
  svr.set_write_timeout(30, 0);
  svr.set_tcp_nodelay(true);  // stream each token at once, not after the client's delayed ACK
  svr.set_keep_alive_max_count(1000);
  serve::install_routes(svr, state);
  int bound = port;
  if (port == 0) bound = svr.bind_to_any_port(host);
  else if (!svr.bind_to_port(host, port)) bound = -1;
  if (bound <= 0) {
    log.error("listen_failed", {{"host", host}, {"port", port}});
    std::fprintf(stderr, "brisk serve: error: cannot listen on %s:%d\n", host.c_str(), port);
    stop_signal_thread();
    return 1;
  }
  std::thread http_thread([&] { svr.listen_after_bind(); });
  log.info("listening", {{"host", host}, {"port", bound}});

  brisk_model* model = nullptr;
  brisk_engine* engine = nullptr;
  std::unique_ptr<serve::Scheduler> scheduler;
  std::thread sched_thread;
  int rc = 0;
  auto fail_start = [&](brisk_status st, const char* what) {
    log.error("start_failed", {{"what", what}, {"error", brisk_last_error()}, {"status", brisk_status_name(st)}});
    std::fprintf(stderr, "brisk serve: error: %s: %s (%s)\n", what, brisk_last_error(), brisk_status_name(st));
    rc = 1;
  };
  do {
    log.info("loading", {{"model", model_path}});
    brisk_status st = brisk_model_open(model_path.c_str(), &mo, &model);
    if (st != BRISK_OK) {
      fail_start(st, "cannot open the model");
      break;
    }
    brisk_engine_options eo;
    brisk_engine_options_init(&eo);
    eo.n_ctx = static_cast<uint32_t>(n_ctx);
    eo.n_threads = static_cast<uint32_t>(n_threads);
    eo.n_batch = static_cast<uint32_t>(n_batch);
    eo.cache_type_k = cache_k;
    eo.cache_type_v = cache_v;
    eo.no_pin = args.count("no-pin") ? 1 : 0;
    if (parallel == 0) {
      // 'auto': the most slots the memory plan allows, less the cache's.
      uint32_t fit = 0;
      eo.n_seq_max = 32u + static_cast<uint32_t>(cache_slots);
      if ((st = brisk_engine_max_sequences(model, &eo, &fit)) != BRISK_OK) {
        fail_start(st, "cannot plan memory");
        break;
      }
      if (fit <= static_cast<uint32_t>(cache_slots)) {
        log.error("start_failed", {{"what", "--parallel auto"}, {"error", "not even one request fits in memory besides "
                                                                           "the prefix cache's slots; lower --ctx-size or --cache-slots"}});
        rc = 1;
        break;
      }
      parallel = static_cast<int>(fit) - cache_slots;
    }
    eo.n_seq_max = static_cast<uint32_t>(parallel + cache_slots);
    if ((st = brisk_engine_create(model, &eo, &engine)) != BRISK_OK) {
      fail_start(st, "cannot create the engine");
      break;
    }
    std::string chat_template = args["chat-template"].as<std::string>();
    if (!chat_template.empty() && !serve::chat_template_works(model, chat_template)) {
      log.error("start_failed", {{"what", "--chat-template"}, {"error", brisk_last_error()}});
      std::fprintf(stderr, "brisk serve: error: --chat-template %s: %s\n", chat_template.c_str(), brisk_last_error());
      rc = 2;
      break;
    }
    if (chat_template.empty() && !serve::chat_template_works(model, "")) {
      chat_template = "chatml";
      log.warn("chat_template", {{"message", "the model has no chat template brisk recognises; using ChatML "
                                             "(choose one with --chat-template)"}});
    }
    char desc[512] = "";
    size_t needed = 0;
    brisk_engine_describe(engine, desc, sizeof desc, &needed);
    // The context the engine settled on (0 meant the model's).
    state.limits.n_ctx = n_ctx > 0 ? n_ctx : std::min(brisk_model_n_ctx_train(model) > 0 ? brisk_model_n_ctx_train(model) : 4096, 4096);
    state.limits.max_tokens = max_tokens;
    state.limits.chat_template = chat_template;
    serve::SchedulerConfig sc;
    sc.parallel = parallel;
    sc.cache_slots = cache_slots;
    sc.max_queue = max_queue;
    scheduler = std::make_unique<serve::Scheduler>(engine, sc, state.metrics, log);
    sched_thread = std::thread([&] { scheduler->run(); });
    state.model = model;
    state.scheduler = scheduler.get();
    state.metrics.slots = parallel;
    // Logged before /health says ready, so a client that saw 200 can find it.
    log.info("ready", {{"model", state.model_id}, {"parallel", parallel}, {"cache_slots", cache_slots},
                       {"ctx", state.limits.n_ctx}, {"engine", desc}, {"auth", !api_key.empty()}});
    state.phase = Phase::ready;
  } while (false);

  if (rc == 0) {
    std::unique_lock<std::mutex> lock(waiter.mu);
    waiter.cv.wait(lock, [&] { return waiter.signal != 0; });
    const int sig = waiter.signal;
    lock.unlock();
    // Drain: new requests get 503 (and /health says so, for load balancers);
    // requests in flight finish until the deadline, then are cut off.
    state.phase = Phase::draining;
    scheduler->drain();
    log.info("draining", {{"signal", sig == SIGINT ? "SIGINT" : "SIGTERM"}, {"in_flight", state.in_flight.load()},
                          {"deadline_s", shutdown_timeout}});
    const double deadline = now_seconds() + shutdown_timeout;
    while (state.in_flight > 0 && now_seconds() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (state.in_flight > 0) {
      log.warn("shutdown_deadline", {{"in_flight", state.in_flight.load()}});
      scheduler->abort_all();
      while (state.in_flight > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  svr.stop();
  http_thread.join();
  if (scheduler) {
    scheduler->stop();
    sched_thread.join();
    scheduler.reset();
  }
  brisk_engine_free(engine);
  brisk_model_close(model);
  stop_signal_thread();
  log.info("stopped", {{"exit_code", rc}});
  return rc;
}

}  // namespace brisk::tools
