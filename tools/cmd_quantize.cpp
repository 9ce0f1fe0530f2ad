// SPDX-License-Identifier: MIT
// brisk quantize: F32/F16 GGUF -> quantized GGUF, llama-quantize's choices,
// optionally calibrated (importance-weighted, automatic per-tensor precision).
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

namespace {

struct Row {
  std::string name, why;
  int32_t src = 0, type = 0;
  uint64_t n = 0, bytes = 0;
};

struct State {
  std::vector<Row> rows;
  bool quiet = false;
  Progress progress;
};

void on_tensor(void* ud, const char* name, int32_t src, int32_t type, uint64_t n, uint64_t bytes, const char* why) {
  static_cast<State*>(ud)->rows.push_back({name, why, src, type, n, bytes});
}

// Per-tensor lines (unless --quiet) besides the shared progress display.
int on_progress(void* ud, const char* stage, uint64_t done, uint64_t total, const char* detail) {
  State* s = static_cast<State*>(ud);
  if (std::string(stage) == "quantize" && !s->quiet && !s->rows.empty()) {
    const Row& r = s->rows.back();
    const int w = static_cast<int>(std::to_string(total).size());
    char line[256];
    std::snprintf(line, sizeof line, "[%*llu/%llu] %-32s %s -> %s", w, static_cast<unsigned long long>(done + 1),
                  static_cast<unsigned long long>(total), detail, type_name(r.src), type_name(r.type));
    s->progress.line(line);
  }
  return Progress::callback(&s->progress, stage, done, total, detail);
}

nlohmann::json result_json(const State& s, const std::string& in, const std::string& out, double seconds) {
  nlohmann::json tensors = nlohmann::json::array();
  uint64_t bytes = 0, n = 0;
  for (const Row& r : s.rows) {
    tensors.push_back({{"name", r.name}, {"from", type_name(r.src)}, {"to", type_name(r.type)}, {"elements", r.n},
                       {"bytes", r.bytes}, {"why", r.why}});
    bytes += r.bytes;
    n += r.n;
  }
  return {{"input", in},
          {"output", out},
          {"file_bytes", file_bytes(out)},
          {"weights", n},
          {"bits_per_weight", n ? 8.0 * bytes / n : 0.0},
          {"seconds", seconds},
          {"tensors", tensors}};
}

void print_table(const State& s, const std::string& out) {
  std::printf("\n%-32s %-6s %-6s %12s %10s  %s\n", "tensor", "from", "to", "elements", "bytes", "why");
  uint64_t bytes = 0, n = 0;
  for (const Row& r : s.rows) {
    std::printf("%-32s %-6s %-6s %12llu %10llu  %s\n", r.name.c_str(), type_name(r.src), type_name(r.type),
                static_cast<unsigned long long>(r.n), static_cast<unsigned long long>(r.bytes), r.why.c_str());
    bytes += r.bytes;
    n += r.n;
  }
  const uint64_t size = file_bytes(out);
  std::printf("\n%s: %llu bytes (%.2f MiB), tensors %.3f bits per weight over %llu weights\n", out.c_str(),
              static_cast<unsigned long long>(size), size / 1048576.0, n ? 8.0 * bytes / n : 0.0,
              static_cast<unsigned long long>(n));
}

}  // namespace

int cmd_quantize(int argc, char** argv) {
  cxxopts::Options opts("brisk quantize", "Quantize a GGUF model (choices as llama-quantize's).");
  // clang-format off
  add_model_option(opts, "input model (GGUF, F32/F16/BF16)");
  add_output_option(opts, "output model (GGUF), written atomically");
  opts.add_options()
    ("i,input", "same as -m (the older spelling)", cxxopts::value<std::string>(), "FILE")
    ("type", "q8_0, q4_0, q4_1, q4_k_m, q4_k_s, q6_k, f16, bf16, q4_k, q5_k, mixed-4-8",
     cxxopts::value<std::string>()->default_value("q8_0"))
    ("tensor-type", "override by regex: 'attn_.*=q8_0' (repeatable; first match wins)",
     cxxopts::value<std::vector<std::string>>())
    ("calibration", "statistics from brisk calibrate (or a llama-imatrix GGUF)", cxxopts::value<std::string>())
    ("calibration-data", "the data files given to calibrate (repeatable): KL sensitivity and held-out evaluation",
     cxxopts::value<std::vector<std::string>>())
    ("target-size", "automatic per-tensor types within this file size (bytes or K/M/G)", cxxopts::value<std::string>())
    ("target-bpw", "automatic per-tensor types within this many bits per weight", cxxopts::value<double>())
    ("sensitivity", "kl (measure on calibration text) or proxy (weighted error only)",
     cxxopts::value<std::string>()->default_value("kl"))
    ("sensitivity-tokens", "calibration tokens for the KL measurement", cxxopts::value<uint32_t>()->default_value("1024"))
    ("no-report", "do not write OUT.report.md / OUT.report.json")
    ("eval-file", "evaluate on this text instead of the held-out split", cxxopts::value<std::string>())
    ("eval-on-calib", "evaluate on the calibration text (figures will be optimistic)")
    ("eval-chunks", "chunks evaluated for the report (0 = all)", cxxopts::value<uint32_t>()->default_value("64"))
    ("q,quiet", "no per-tensor progress lines");
  // clang-format on
  add_read_options(opts, "the input model");
  add_threads_option(opts);
  add_json_option(opts, "on stdout instead of the table: every tensor's types and sizes, the totals and, with a "
                        "report, the report");
  cxxopts::ParseResult args;
  int exit_code = 0;
  if (!parse_command("quantize", opts, argc, argv, &args, &exit_code)) return exit_code;
  std::string in;
  if (!model_arg("quantize", args, &in, "input")) return 2;
  if (in.empty() || !args.count("output")) return usage_error("quantize", "-m MODEL and -o OUTPUT are required");
  const std::string out = args["output"].as<std::string>();
  const std::string type = args["type"].as<std::string>();
  std::vector<std::string> overrides;
  if (args.count("tensor-type")) overrides = args["tensor-type"].as<std::vector<std::string>>();
  std::vector<const char*> override_ptrs;
  for (const std::string& s : overrides) override_ptrs.push_back(s.c_str());

  State st;
  st.quiet = args.count("quiet") > 0;
  brisk_quantize_options o;
  brisk_quantize_options_init(&o);
  apply_read_options(args, &o);
  o.type = type.c_str();
  o.tensor_types = override_ptrs.data();
  o.n_tensor_types = override_ptrs.size();
  o.n_threads = threads_arg_resolved(args);
  o.progress_fn = on_progress;
  o.progress_user_data = &st;
  o.abort_fn = abort_requested;
  o.log_fn = Progress::log;
  o.log_user_data = &st.progress;
  o.tensor_fn = on_tensor;
  o.tensor_user_data = &st;
  std::string calibration, eval_file;
  if (args.count("calibration")) {
    calibration = args["calibration"].as<std::string>();
    o.calibration = calibration.c_str();
  }
  std::vector<std::string> calib_data;
  std::vector<const char*> calib_data_ptrs;
  if (args.count("calibration-data")) calib_data = args["calibration-data"].as<std::vector<std::string>>();
  for (const std::string& p : calib_data) calib_data_ptrs.push_back(p.c_str());
  o.calibration_data = calib_data_ptrs.data();
  o.n_calibration_data = calib_data_ptrs.size();
  if (args.count("target-size") && !parse_size(args["target-size"].as<std::string>(), &o.target_size))
    return usage_error("quantize", "bad --target-size (bytes, or with K/M/G)");
  if (args.count("target-bpw")) o.target_bpw = args["target-bpw"].as<double>();
  const std::string sens = args["sensitivity"].as<std::string>();
  if (sens != "kl" && sens != "proxy") return usage_error("quantize", "--sensitivity is kl or proxy");
  o.sensitivity_proxy_only = sens == "proxy";
  o.sensitivity_tokens = args["sensitivity-tokens"].as<uint32_t>();
  o.report = args.count("no-report") ? 0 : 1;
  if (args.count("eval-file")) {
    eval_file = args["eval-file"].as<std::string>();
    o.eval_file = eval_file.c_str();
  }
  o.eval_on_calib = args.count("eval-on-calib") ? 1 : 0;
  const uint32_t eval_chunks = args["eval-chunks"].as<uint32_t>();
  o.eval_max_chunks = eval_chunks == 0 ? UINT32_MAX : eval_chunks;
  catch_sigint();
  const double t0 = now_seconds();
  const brisk_status rc = brisk_quantize(in.c_str(), out.c_str(), &o);
  st.progress.finish();
  if (rc != BRISK_OK) return report("quantize", rc);
  std::string base = out;
  if (base.size() > 5 && base.compare(base.size() - 5, 5, ".gguf") == 0) base.resize(base.size() - 5);
  const bool reported = o.calibration && o.report;
  if (args.count("json")) {
    nlohmann::json j = result_json(st, in, out, now_seconds() - t0);
    std::string report_json;
    if (reported && read_file("quantize", base + ".report.json", &report_json))
      j["report"] = nlohmann::json::parse(report_json, nullptr, false);
    print_json(stdout, j);
    return 0;
  }
  print_table(st, out);
  std::string md;
  if (reported && read_file("quantize", base + ".report.md", &md)) std::printf("\n%s", md.c_str());
  std::fprintf(stderr, "quantized in %.2f s\n", now_seconds() - t0);
  return 0;
}

}  // namespace brisk::tools
