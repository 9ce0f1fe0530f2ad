// SPDX-License-Identifier: MIT
// brisk calibrate: activation statistics of a model over your own text, for
// brisk quantize --calibration. Ctrl-C saves a partial file; --resume continues it.
#include <cstdio>
#include <cxxopts.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "brisk/brisk.h"
#include "commands.h"
#include "common.h"
#include "load_options.h"
#include "progress.h"

namespace brisk::tools {

int cmd_calibrate(int argc, char** argv) {
  cxxopts::Options opts("brisk calibrate",
                        "Record per-matrix activation statistics over your text (see docs/calibration.md).");
  // clang-format off
  add_model_option(opts, "model (GGUF; F32 or F16 preferred)");
  add_output_option(opts, "statistics file to write");
  opts.add_options()
    ("data", "text file, JSONL file or directory (repeatable)", cxxopts::value<std::vector<std::string>>())
    ("jsonl-field", "text field of JSONL records", cxxopts::value<std::string>()->default_value("text"))
    ("c,ctx-size", "tokens per chunk (0 = min(training context, 512))", cxxopts::value<int>()->default_value("0"))
    ("tokens", "token budget, evenly spaced chunks (0 = all)", cxxopts::value<uint64_t>()->default_value("0"))
    ("holdout", "share of each file's tail kept out for evaluation", cxxopts::value<float>()->default_value("0.1"))
    ("resume", "continue a stopped run (same model, data and options)");
  // clang-format on
  add_read_options(opts, "the model");
  add_threads_option(opts);
  add_json_option(opts, "on stdout: output, its size, tokens seen, seconds, complete or stopped");
  cxxopts::ParseResult args;
  int exit_code = 0;
  if (!parse_command("calibrate", opts, argc, argv, &args, &exit_code)) return exit_code;
  std::string model;
  model_arg("calibrate", args, &model);
  if (model.empty() || !args.count("data") || !args.count("output"))
    return usage_error("calibrate", "-m MODEL, --data FILE and -o OUT are required");
  if (args["ctx-size"].as<int>() < 0) return usage_error("calibrate", "-c must not be negative");
  const std::vector<std::string> data = args["data"].as<std::vector<std::string>>();
  std::vector<const char*> ptrs;
  for (const std::string& d : data) ptrs.push_back(d.c_str());
  const std::string field = args["jsonl-field"].as<std::string>();
  brisk_calibrate_options o;
  brisk_calibrate_options_init(&o);
  apply_read_options(args, &o);
  o.data_paths = ptrs.data();
  o.n_data_paths = ptrs.size();
  o.jsonl_field = field.c_str();
  o.n_ctx = static_cast<uint32_t>(args["ctx-size"].as<int>());
  o.max_tokens = args["tokens"].as<uint64_t>();
  o.holdout = args["holdout"].as<float>();
  o.resume = args.count("resume") ? 1 : 0;
  o.n_threads = threads_arg(args);
  // Tokens seen, for --json: the progress callback's last count.
  struct Tracked {
    Progress progress{"tokens"};
    uint64_t done = 0, total = 0;
  } tracked;
  o.progress_fn = [](void* ud, const char* stage, uint64_t done, uint64_t total, const char* detail) {
    Tracked* t = static_cast<Tracked*>(ud);
    t->done = done;
    t->total = total;
    return Progress::callback(&t->progress, stage, done, total, detail);
  };
  o.progress_user_data = &tracked;
  o.abort_fn = abort_requested;
  o.log_fn = Progress::log;
  o.log_user_data = &tracked.progress;
  catch_sigint();
  const std::string out = args["output"].as<std::string>();
  const double t0 = now_seconds();
  const brisk_status st = brisk_calibrate(model.c_str(), out.c_str(), &o);
  tracked.progress.finish();
  if (st != BRISK_OK && st != BRISK_ERR_CANCELLED) return report("calibrate", st);
  const bool stopped = st == BRISK_ERR_CANCELLED;
  if (args.count("json"))
    print_json(stdout, {{"model", model},
                        {"output", out},
                        {"file_bytes", file_bytes(out)},
                        {"tokens_done", tracked.done},
                        {"tokens_total", tracked.total},
                        {"seconds", now_seconds() - t0},
                        {"complete", !stopped}});
  if (stopped) {
    std::fprintf(stderr, "brisk calibrate: stopped: %s\n", brisk_last_error());
    return 130;
  }
  if (!args.count("json")) std::fprintf(stderr, "wrote %s in %.1f s\n", out.c_str(), now_seconds() - t0);
  return 0;
}

}  // namespace brisk::tools
