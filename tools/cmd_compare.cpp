// SPDX-License-Identifier: MIT
// brisk compare: greedy outputs of two models on the same prompts, side by side.
#include <algorithm>
#include <cstdio>
#include <cxxopts.hpp>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "brisk/brisk.h"
#include "brisk/brisk_experimental.h"
#include "commands.h"
#include "common.h"
#include "progress.h"
#include "load_options.h"

namespace brisk::tools {

namespace {

// One line, control characters made visible, at most `width` bytes.
std::string one_line(const std::string& s, size_t width) {
  std::string o;
  for (char c : s) {
    if (c == '\n') o += "\\n";
    else if (c == '\t') o += "\\t";
    else o += c;
  }
  if (o.size() > width) o = o.substr(0, width) + "...";
  return o;
}

}  // namespace

int cmd_compare(int argc, char** argv) {
  cxxopts::Options opts("brisk compare", "Greedy continuations of two models on the same prompts.");
  // clang-format off
  opts.add_options()
    ("m,model", "model (give exactly two: -m A -m B)", cxxopts::value<std::vector<std::string>>())
    ("f,file", "prompts: JSONL with a \"prompt\" (or --field) string per line, or plain text, one per line",
     cxxopts::value<std::string>())
    ("field", "JSONL field holding the prompt", cxxopts::value<std::string>()->default_value("prompt"))
    ("n,n-predict", "tokens generated per prompt", cxxopts::value<int>()->default_value("64"));
  // clang-format on
  add_threads_option(opts);
  add_json_option(opts, "on stdout instead of the text: every prompt's texts, tokens and first divergence");
  add_load_options(opts);
  cxxopts::ParseResult args;
  int exit_code = 0;
  if (!parse_command("compare", opts, argc, argv, &args, &exit_code)) return exit_code;
  if (!args.count("model") || args["model"].as<std::vector<std::string>>().size() != 2 || !args.count("file"))
    return usage_error("compare", "give two models (-m A -m B) and prompts (-f FILE)");
  if (args["n-predict"].as<int>() < 0) return usage_error("compare", "-n must not be negative");
  const std::vector<std::string> models = args["model"].as<std::vector<std::string>>();
  std::string text;
  if (!read_file("compare", args["file"].as<std::string>(), &text)) return 1;
  const std::string field = args["field"].as<std::string>();
  std::vector<std::string> prompts;
  std::istringstream in(text);
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (line[0] == '{') {
      try {
        nlohmann::json j = nlohmann::json::parse(line);
        prompts.push_back(j.at(field).get<std::string>());
      } catch (const std::exception& e) {
        std::fprintf(stderr, "brisk compare: error: line %d: %s\n", no, e.what());
        return 1;
      }
    } else {
      prompts.push_back(line);
    }
  }
  std::vector<const char*> ptrs;
  for (const std::string& p : prompts) ptrs.push_back(p.c_str());

  brisk_model *a = nullptr, *b = nullptr;
  brisk_model_options mo;
  brisk_model_options_init(&mo);
  std::string plan_cache;
  if (!apply_load_options(args, &mo, &plan_cache))
    return usage_error("compare", "--plan must be auto, fixed or measure");
  brisk_status st = brisk_model_open(models[0].c_str(), &mo, &a);
  if (st == BRISK_OK) st = brisk_model_open(models[1].c_str(), &mo, &b);
  brisk_compare_result* r = nullptr;
  if (st == BRISK_OK) {
    brisk_compare_options o;
    brisk_compare_options_init(&o);
    o.n_predict = args["n-predict"].as<int>();
    o.n_threads = threads_arg(args);
    Progress progress("prompts");
    o.progress_fn = Progress::callback;
    o.progress_user_data = &progress;
    o.abort_fn = abort_requested;
    catch_sigint();
    st = brisk_compare(a, b, ptrs.data(), ptrs.size(), &o, &r);
    progress.finish();
  }
  int rc = 0;
  if (st != BRISK_OK) {
    rc = report("compare", st);
  } else {
    size_t need = 0;
    brisk_compare_result_json(r, nullptr, 0, &need);
    std::string js(need, '\0');
    brisk_compare_result_json(r, js.data(), js.size(), &need);
    js.resize(need - 1);
    if (args.count("json")) {
      std::printf("%s\n", js.c_str());
    } else {
      const nlohmann::json j = nlohmann::json::parse(js);
      int i = 0;
      for (const auto& p : j["prompts"]) {
        std::printf("[%d] %s\n    prompt: %s\n", ++i, p["identical"].get<bool>() ? "identical" : "DIFFERENT",
                    one_line(p["prompt"].get<std::string>(), 100).c_str());
        if (!p["identical"].get<bool>())
          std::printf("    first divergence: token %d, character %d\n", p["first_divergence_token"].get<int>(),
                      p["first_divergence_char"].get<int>());
        std::printf("    A: %s\n    B: %s\n", one_line(p["text_a"].get<std::string>(), 160).c_str(),
                    one_line(p["text_b"].get<std::string>(), 160).c_str());
      }
      std::printf("\n%zu prompts: %.1f %% identical; diverging ones part after %.1f tokens on average\n",
                  prompts.size(), j["identical_pct"].get<double>(), j["mean_first_divergence_token"].get<double>());
    }
  }
  brisk_compare_result_free(r);
  brisk_model_close(b);
  brisk_model_close(a);
  return rc;
}

}  // namespace brisk::tools
