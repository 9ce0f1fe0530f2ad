// brisk calibrate: activation statistics of a model over your own text, for
// brisk quantize --calibration. Ctrl-C saves a partial file; --resume continues it.
#include <csignal>
#include <cstdio>
#include <cxxopts.hpp>
#include <string>
#include <vector>

#include "brisk/brisk.h"
#include "commands.h"
#include "common.h"

namespace brisk::tools {

namespace {

volatile std::sig_atomic_t g_interrupted = 0;
void on_sigint(int) { g_interrupted = 1; }
int abort_requested(void*) { return g_interrupted; }
int on_progress(void* ud, const char*, uint64_t done, uint64_t total, const char*) {
  static_cast<ProgressLine*>(ud)->update(done, total, "tokens");
  return 0;
}
void on_log(void*, brisk_log_level, const char* msg) { std::fprintf(stderr, "%s\n", msg); }

}  // namespace

int cmd_calibrate(int argc, char** argv) {
  cxxopts::Options opts("brisk calibrate",
                        "Record per-matrix activation statistics over your text (see docs/calibration.md).");
  // clang-format off
  opts.add_options()
    ("m,model", "model (GGUF; F32 or F16 preferred)", cxxopts::value<std::string>())
    ("data", "text file, JSONL file or directory (repeatable)", cxxopts::value<std::vector<std::string>>())
    ("o,output", "statistics file to write", cxxopts::value<std::string>())
    ("jsonl-field", "text field of JSONL records", cxxopts::value<std::string>()->default_value("text"))
    ("c,ctx-size", "tokens per chunk (0 = min(training context, 512))", cxxopts::value<int>()->default_value("0"))
    ("tokens", "token budget, evenly spaced chunks (0 = all)", cxxopts::value<uint64_t>()->default_value("0"))
    ("holdout", "share of each file's tail kept out for evaluation", cxxopts::value<float>()->default_value("0.1"))
    ("resume", "continue a stopped run (same model, data and options)")
    ("t,threads", "threads (0 = one per physical core)", cxxopts::value<int>()->default_value("0"))
    ("h,help", "show this help");
  // clang-format on
  cxxopts::ParseResult args;
  try {
    args = opts.parse(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "brisk calibrate: error: %s (see 'brisk calibrate --help')\n", e.what());
    return 2;
  }
  if (args.count("help")) {
    std::printf("%s\n", opts.help().c_str());
    return 0;
  }
  if (!args.count("model") || !args.count("data") || !args.count("output")) {
    std::fprintf(stderr, "brisk calibrate: error: -m MODEL, --data FILE and -o OUT are required\n");
    return 2;
  }
  if (args["ctx-size"].as<int>() < 0 || args["threads"].as<int>() < 0) {
    std::fprintf(stderr, "brisk calibrate: error: -c and -t must not be negative\n");
    return 2;
  }
  const std::vector<std::string> data = args["data"].as<std::vector<std::string>>();
  std::vector<const char*> ptrs;
  for (const std::string& d : data) ptrs.push_back(d.c_str());
  const std::string field = args["jsonl-field"].as<std::string>();
  brisk_calibrate_options o;
  brisk_calibrate_options_init(&o);
  o.data_paths = ptrs.data();
  o.n_data_paths = ptrs.size();
  o.jsonl_field = field.c_str();
  o.n_ctx = static_cast<uint32_t>(args["ctx-size"].as<int>());
  o.max_tokens = args["tokens"].as<uint64_t>();
  o.holdout = args["holdout"].as<float>();
  o.resume = args.count("resume") ? 1 : 0;
  o.n_threads = static_cast<uint32_t>(args["threads"].as<int>());
  ProgressLine progress("calibrate");
  o.progress_fn = on_progress;
  o.progress_user_data = &progress;
  o.abort_fn = abort_requested;
  o.log_fn = on_log;
  std::signal(SIGINT, on_sigint);
  const std::string out = args["output"].as<std::string>();
  const double t0 = now_seconds();
  const brisk_status st = brisk_calibrate(args["model"].as<std::string>().c_str(), out.c_str(), &o);
  progress.finish();
  if (st == BRISK_ERR_CANCELLED) {
    std::fprintf(stderr, "brisk calibrate: stopped: %s\n", brisk_last_error());
    return 130;
  }
  if (st != BRISK_OK) return report("calibrate", st);
  std::fprintf(stderr, "wrote %s in %.1f s\n", out.c_str(), now_seconds() - t0);
  return 0;
}

}  // namespace brisk::tools
