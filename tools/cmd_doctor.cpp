// SPDX-License-Identifier: MIT
// brisk doctor: what on this machine slows brisk down, and what to do about it.
#include <unistd.h>

#include <cstdio>
#include <cxxopts.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "brisk/brisk.h"
#include "brisk/brisk_experimental.h"
#include "commands.h"
#include "common.h"

namespace brisk::tools {

namespace {

int load_progress(void*, const char*, uint64_t done, uint64_t total, const char*) {
  if (::isatty(2)) {
    std::fprintf(stderr, "\r\033[Kload test: %llu/%llu s", static_cast<unsigned long long>(done),
                 static_cast<unsigned long long>(total));
    if (done >= total) std::fprintf(stderr, "\r\033[K");
  }
  return 0;
}

}  // namespace

int cmd_doctor(int argc, char** argv) {
  cxxopts::Options opts("brisk doctor",
                        "Check this machine for what slows brisk down; each finding is OK, WARN or FAIL with what to "
                        "do. Exits 1 if a check fails.");
  // clang-format off
  opts.add_options()
    ("duration", "seconds of load in the throttling test (0 skips it)", cxxopts::value<double>()->default_value("20"))
    ("quick", "a 3-second load test")
    ("files-only", "only read /proc and /sys: no measurements")
    ("root", "read /proc and /sys under this directory (a copy from another machine, or a test tree)", cxxopts::value<std::string>()->default_value(""))
    ;
  // clang-format on
  add_model_option(opts, "also check this model (memory plan, its disk, read speed)");
  add_threads_option(opts);
  add_json_option(opts, "on stdout instead of the text");
  cxxopts::ParseResult args;
  int exit_code = 0;
  if (!parse_command("doctor", opts, argc, argv, &args, &exit_code)) return exit_code;
  const int threads = args["threads"].as<int>();
  double duration = args.count("quick") ? 3.0 : args["duration"].as<double>();
  if (threads < 0 || !(duration >= 0 && duration <= 3600)) {
    std::fprintf(stderr, "brisk doctor: error: -t must not be negative, --duration must be 0..3600\n");
    return 2;
  }
  const std::string model = args.count("model") ? args["model"].as<std::string>() : "";
  const std::string root = args["root"].as<std::string>();
  brisk_doctor_options o;
  brisk_doctor_options_init(&o);
  o.root = root.c_str();
  o.model_path = model.empty() ? nullptr : model.c_str();
  o.n_threads = static_cast<uint32_t>(threads);
  o.load_seconds = duration;
  o.measure = args.count("files-only") ? 0 : 1;
  o.progress_fn = load_progress;
  brisk_doctor_report* report = nullptr;
  if (!args.count("files-only")) std::fprintf(stderr, "brisk doctor: measuring (about %.0f s)...\n", duration + 5);
  brisk_status st = brisk_doctor_run(&o, &report);
  if (st != BRISK_OK) return tools::report("doctor", st);
  size_t needed = 0;
  brisk_doctor_report_json(report, nullptr, 0, &needed);
  std::string text(needed, '\0');
  st = brisk_doctor_report_json(report, text.data(), text.size(), &needed);
  brisk_doctor_report_free(report);
  if (st != BRISK_OK) return tools::report("doctor", st);
  text.resize(needed - 1);
  const nlohmann::json j = nlohmann::json::parse(text);
  if (args.count("json")) {
    std::printf("%s\n", text.c_str());
  } else {
    for (const auto& c : j["checks"]) {
      std::string status = c["status"].get<std::string>();
      for (char& ch : status) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      std::printf("%-6s %-11s %s\n", ("[" + status + "]").c_str(), c["check"].get<std::string>().c_str(),
                  c["value"].get<std::string>().c_str());
      if (!c["advice"].get<std::string>().empty())
        std::printf("%-18s -> %s\n", "", c["advice"].get<std::string>().c_str());
    }
    std::printf("%d ok, %d warnings, %d failures; brisk will use -t %d\n", j["ok"].get<int>(), j["warn"].get<int>(),
                j["fail"].get<int>(), j["threads"].get<int>());
  }
  return j["fail"].get<int>() > 0 ? 1 : 0;
}

}  // namespace brisk::tools
