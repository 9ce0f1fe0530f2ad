// SPDX-License-Identifier: MIT
// brisk verify: recompute a model's (or bundle's) checksums; --add-manifest
// gives a GGUF without one a manifest.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cxxopts.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "brisk/brisk.h"
#include "commands.h"
#include "common.h"
#include "load_options.h"
#include "progress.h"

namespace brisk::tools {

namespace {

struct Mismatches {
  Progress* progress = nullptr;
  bool print = true;  // as text on stdout (not with --json)
  nlohmann::json list = nlohmann::json::array();
};

void on_mismatch(void* ud, const char* where, const char* detail) {
  Mismatches* m = static_cast<Mismatches*>(ud);
  m->list.push_back({{"where", where}, {"detail", detail}});
  if (!m->print) return;
  m->progress->clear();  // the bar, if any, must not end up inside stdout's line on a terminal
  std::fprintf(stdout, "MISMATCH %s: %s\n", where, detail);
  std::fflush(stdout);
}

}  // namespace

int cmd_verify(int argc, char** argv) {
  cxxopts::Options opts("brisk verify",
                        "Check a GGUF model against its embedded checksum manifest, or a .brisk bundle against its\n"
                        "own; prints OK or every place that differs.\n\n"
                        "  brisk verify -m FILE\n"
                        "  brisk verify --add-manifest -m FILE [-o OUT.gguf]");
  add_model_option_positional(opts, "GGUF or .brisk file");
  // clang-format off
  opts.add_options()
    ("add-manifest", "rewrite the GGUF with a fresh checksum manifest");
  // clang-format on
  add_output_option(opts, "with --add-manifest: write here instead of in place");
  add_read_options(opts, "a GGUF");  // a bundle is streamed, never mapped
  add_threads_option(opts);
  add_json_option(opts, "on stdout instead of the text: status (ok, failed, no_manifest, manifest_added), every "
                        "mismatch, bytes checked and seconds");
  cxxopts::ParseResult args;
  int exit_code = 0;
  if (!parse_command("verify", opts, argc, argv, &args, &exit_code)) return exit_code;
  std::string file;
  if (!model_arg("verify", args, &file)) return 2;
  if (file.empty()) return usage_error("verify", "no file given (-m FILE)");
  if (args.count("output") && !args.count("add-manifest")) return usage_error("verify", "-o goes with --add-manifest");
  const bool json = args.count("json") > 0;
  Progress progress;
  Mismatches mismatches;
  mismatches.progress = &progress;
  mismatches.print = !json;
  brisk_verify_options o;
  brisk_verify_options_init(&o);
  apply_read_options(args, &o);
  o.n_threads = threads_arg_resolved(args);
  o.progress_fn = Progress::callback;
  o.progress_user_data = &progress;
  o.abort_fn = abort_requested;
  o.mismatch_fn = on_mismatch;
  o.mismatch_user_data = &mismatches;
  catch_sigint();
  const double t0 = now_seconds();
  auto result = [&](const char* status, uint64_t bytes) {
    return nlohmann::json{{"file", file},    {"status", status},         {"bytes_checked", bytes},
                          {"seconds", now_seconds() - t0}, {"mismatches", mismatches.list}};
  };
  if (args.count("add-manifest")) {
    const std::string out = args.count("output") ? args["output"].as<std::string>() : file;
    const brisk_status st = brisk_add_manifest(file.c_str(), out.c_str(), &o);
    progress.finish();
    if (st != BRISK_OK) return report("verify", st);
    if (json) {
      nlohmann::json j = result("manifest_added", 0);
      j["output"] = out;
      print_json(stdout, j);
    } else {
      std::fprintf(stderr, "wrote %s with a checksum manifest in %.2f s\n", out.c_str(), now_seconds() - t0);
    }
    return 0;
  }
  uint64_t bytes = 0;
  const brisk_status st = brisk_verify(file.c_str(), &o, &bytes);
  progress.finish();
  const double dt = now_seconds() - t0;
  // NOT_FOUND also means a missing file; only an existing one lacks a manifest.
  if (st == BRISK_ERR_NOT_FOUND && ::access(file.c_str(), F_OK) == 0) {
    if (json) print_json(stdout, result("no_manifest", bytes));
    else std::printf("NO MANIFEST %s\n", file.c_str());
    std::fprintf(stderr, "brisk verify: %s has no checksum manifest; add one with 'brisk verify --add-manifest %s'\n",
                 file.c_str(), file.c_str());
    return 1;
  }
  if (st == BRISK_ERR_CHECKSUM) {
    if (json) print_json(stdout, result("failed", bytes));
    else std::printf("FAILED %s\n", file.c_str());
    return 1;
  }
  if (st != BRISK_OK) return report("verify", st);
  if (json) {
    print_json(stdout, result("ok", bytes));
    return 0;
  }
  std::printf("OK %s\n", file.c_str());
  std::fprintf(stderr, "%.1f MB checked in %.3f s (%.2f GB/s)\n", static_cast<double>(bytes) / 1e6, dt,
               static_cast<double>(bytes) / 1e9 / std::max(dt, 1e-9));
  return 0;
}

}  // namespace brisk::tools
