// SPDX-License-Identifier: MIT
#include "common.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace brisk::tools {

// The library's names ("q4_0", "auto"), so the CLI spells types as brisk.h does.
bool parse_type(const std::string& name, int32_t* out) {
  brisk_type t;
  if (brisk_type_from_name(name.c_str(), &t) != BRISK_OK) return false;
  *out = t;
  return true;
}

const char* type_name(int32_t type) {
  const char* name = brisk_type_name(static_cast<brisk_type>(type));
  return name ? name : "?";
}

bool parse_size(const std::string& text, uint64_t* out) {
  if (text.empty()) return false;
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    return false;
  }
  std::string suffix = text.substr(used);
  double mult = 1;
  if (suffix == "K" || suffix == "k" || suffix == "KiB") mult = 1024.0;
  else if (suffix == "M" || suffix == "MiB") mult = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "GiB") mult = 1024.0 * 1024 * 1024;
  else if (suffix == "KB" || suffix == "kB") mult = 1e3;
  else if (suffix == "MB") mult = 1e6;
  else if (suffix == "GB") mult = 1e9;
  else if (!suffix.empty() && suffix != "B") return false;
  if (!(v > 0)) return false;
  *out = static_cast<uint64_t>(v * mult);
  return true;
}

bool read_file(const char* cmd, const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "brisk %s: error: cannot read '%s': %s\n", cmd, path.c_str(), std::strerror(errno));
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

void add_model_option(cxxopts::Options& opts, const std::string& what) {
  opts.add_options()("m,model", what, cxxopts::value<std::string>(), "FILE");
}

void add_model_option_positional(cxxopts::Options& opts, const std::string& what) {
  add_model_option(opts, what + "; also taken as the first argument");
  // Hidden from the help (cxxopts lists no positional options by default).
  opts.add_options()("positional-model", "", cxxopts::value<std::string>());
  opts.parse_positional({"positional-model"});
  opts.positional_help("[MODEL]");
}

void add_output_option(cxxopts::Options& opts, const std::string& what) {
  opts.add_options()("o,output", what, cxxopts::value<std::string>(), "FILE");
}

void add_threads_option(cxxopts::Options& opts) {
  opts.add_options()("t,threads", "worker threads (0 = one per physical core)",
                     cxxopts::value<int>()->default_value("0"), "N");
}

void add_json_option(cxxopts::Options& opts, const std::string& where) {
  opts.add_options()("json", "print the results as JSON " + where);
}

int usage_error(const char* cmd, const std::string& message) {
  std::fprintf(stderr, "brisk %s: error: %s (see 'brisk %s --help')\n", cmd, message.c_str(), cmd);
  return 2;
}

bool parse_command(const char* cmd, cxxopts::Options& opts, int argc, char** argv, cxxopts::ParseResult* args,
                   int* exit_code) {
  opts.add_options()("h,help", "show this help");
  try {
    *args = opts.parse(argc, argv);
  } catch (const std::exception& e) {
    *exit_code = usage_error(cmd, e.what());
    return false;
  }
  if (args->count("help")) {
    std::printf("%s\n", opts.help().c_str());
    *exit_code = 0;
    return false;
  }
  if (!args->unmatched().empty()) {
    *exit_code = usage_error(cmd, "unexpected argument '" + args->unmatched().front() + "'");
    return false;
  }
  if (args->count("threads") && (*args)["threads"].as<int>() < 0) {
    *exit_code = usage_error(cmd, "--threads must be 0 (one per physical core) or more");
    return false;
  }
  return true;
}

bool model_arg(const char* cmd, const cxxopts::ParseResult& args, std::string* model, const char* alias) {
  model->clear();
  std::string other;
  if (args.count("model")) *model = args["model"].as<std::string>();
  if (args.count("positional-model")) other = args["positional-model"].as<std::string>();
  if (alias && args.count(alias)) {
    const std::string a = args[alias].as<std::string>();
    if (!other.empty() && other != a) {
      usage_error(cmd, "two models given ('" + other + "' and '" + a + "')");
      return false;
    }
    other = a;
  }
  if (!model->empty() && !other.empty() && *model != other) {
    usage_error(cmd, "two models given ('" + *model + "' and '" + other + "')");
    return false;
  }
  if (model->empty()) *model = other;
  return true;
}

uint32_t threads_arg(const cxxopts::ParseResult& args) {
  return static_cast<uint32_t>(std::max(0, args["threads"].as<int>()));
}

uint32_t threads_arg_resolved(const cxxopts::ParseResult& args) {
  const uint32_t n = threads_arg(args);
  return n > 0 ? n : brisk_physical_cores();
}

void print_json(FILE* out, const nlohmann::json& j) {
  const std::string s = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::fprintf(out, "%s\n", s.c_str());
  std::fflush(out);
}

uint64_t file_bytes(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

void add_sampling_options(cxxopts::Options& opts) {
  // clang-format off
  opts.add_options()
    ("temp", "temperature; 0 = greedy", cxxopts::value<float>()->default_value("0.8"))
    ("top-k", "keep the k most likely tokens (0 = off)", cxxopts::value<int>()->default_value("40"))
    ("top-p", "keep the smallest set with this probability mass (1 = off)", cxxopts::value<float>()->default_value("0.95"))
    ("min-p", "drop tokens below min-p x the top probability (0 = off)", cxxopts::value<float>()->default_value("0.05"))
    ("repeat-penalty", "penalty for recently seen tokens (1 = off)", cxxopts::value<float>()->default_value("1.0"))
    ("repeat-last-n", "how many recent tokens the penalty looks at", cxxopts::value<int>()->default_value("64"));
  // clang-format on
}

void sampling_arg(const cxxopts::ParseResult& args, brisk_sampler_options* out) {
  out->temperature = args["temp"].as<float>();
  out->top_k = args["top-k"].as<int>();
  out->top_p = args["top-p"].as<float>();
  out->min_p = args["min-p"].as<float>();
  out->repeat_penalty = args["repeat-penalty"].as<float>();
  out->repeat_last_n = args["repeat-last-n"].as<int>();
}

std::string kernel_plan_text(const brisk_model* model, brisk_status* st) {
  size_t needed = 0;
  std::string text(4096, '\0');
  brisk_status s = brisk_model_kernel_plan(model, text.data(), text.size(), &needed);
  if (s == BRISK_ERR_BUFFER_TOO_SMALL) {
    text.resize(needed);
    s = brisk_model_kernel_plan(model, text.data(), text.size(), &needed);
  }
  if (st) *st = s;
  if (s != BRISK_OK) return "";
  text.resize(needed > 0 ? needed - 1 : 0);
  return text;
}

}  // namespace brisk::tools
