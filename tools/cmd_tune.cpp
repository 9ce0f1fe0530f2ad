// SPDX-License-Identifier: MIT
// brisk tune: measure the kernel plan for this machine and a model now
// (ignoring a cached one), cache it, and print it.
#include <cstdio>
#include <cxxopts.hpp>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "brisk/brisk.h"
#include "commands.h"
#include "common.h"
#include "load_options.h"

namespace brisk::tools {

namespace {
void log_to_stderr(void*, brisk_log_level level, const char* message) {
  std::fprintf(stderr, "brisk tune: %s%s\n", level <= BRISK_LOG_WARN ? "warning: " : "", message);
}
}  // namespace

int cmd_tune(int argc, char** argv) {
  cxxopts::Options opts("brisk tune",
                        "Measure which matrix layout and kernel runs each weight type and column count fastest on\n"
                        "this machine, on the model's own matrices; cache the plan (later loads read it) and print\n"
                        "it. Loads plan automatically; tune measures again, e.g. after a hardware change.\n\n"
                        "  brisk tune -m MODEL [-t N] [--plan-cache DIR]");
  add_model_option(opts, "model (GGUF)");
  add_threads_option(opts);
  add_json_option(opts, "on stdout instead of the text: the model, the threads and the plan's lines");
  opts.add_options()("plan-cache", "directory of cached kernel plans (default ~/.cache/brisk)",
                     cxxopts::value<std::string>());
  add_read_options(opts, "the model");  // no --plan: tune always measures
  cxxopts::ParseResult args;
  int exit_code = 0;
  if (!parse_command("tune", opts, argc, argv, &args, &exit_code)) return exit_code;
  std::string model_path;
  if (!model_arg("tune", args, &model_path)) return 2;
  if (model_path.empty()) return usage_error("tune", "no model given (-m MODEL.gguf)");
  std::string cache_dir;
  brisk_model_options mo;
  brisk_model_options_init(&mo);
  mo.plan_mode = BRISK_PLAN_MEASURE;
  apply_read_options(args, &mo);
  mo.plan_threads = threads_arg(args);
  mo.log_fn = log_to_stderr;
  mo.log_level = BRISK_LOG_WARN;
  if (args.count("plan-cache")) {
    cache_dir = args["plan-cache"].as<std::string>();
    mo.plan_cache_dir = cache_dir.c_str();
  }
  brisk_model* model = nullptr;
  const double t0 = now_seconds();
  brisk_status st = brisk_model_open(model_path.c_str(), &mo, &model);
  if (st != BRISK_OK) return report("tune", st);
  const double seconds = now_seconds() - t0;
  const std::string plan = kernel_plan_text(model, &st);
  brisk_model_close(model);
  if (st != BRISK_OK) return report("tune", st);
  if (args.count("json")) {
    nlohmann::json lines = nlohmann::json::array();
    std::istringstream in(plan);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    print_json(stdout, {{"model", model_path}, {"threads", threads_arg_resolved(args)}, {"load_seconds", seconds},
                        {"plan", lines}});
  } else {
    std::printf("%s", plan.c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace brisk::tools
