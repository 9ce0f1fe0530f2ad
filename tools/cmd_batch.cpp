// SPDX-License-Identifier: MIT
// brisk batch: run every record of a JSONL file through one engine, as many
// sequences at once as memory allows, into a JSONL output that a killed or
// power-cut run continues without losing, repeating or tearing a record.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cxxopts.hpp>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "brisk/brisk.h"
#include "cmd_batch_io.h"
#include "cmd_batch_records.h"
#include "cmd_batch_run.h"
#include "commands.h"
#include "common.h"
#include "load_options.h"

namespace brisk::tools {

namespace {

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "brisk batch: error: %s (see 'brisk batch --help')\n", msg.c_str());
  return 2;
}

bool parse_shard(const std::string& s, uint32_t* k, uint32_t* n) {
  const size_t slash = s.find('/');
  if (slash == std::string::npos) return false;
  try {
    size_t a = 0, b = 0;
    const unsigned long kk = std::stoul(s.substr(0, slash), &a), nn = std::stoul(s.substr(slash + 1), &b);
    if (a != slash || b != s.size() - slash - 1 || nn == 0 || nn > 100000 || kk >= nn) return false;
    *k = static_cast<uint32_t>(kk);
    *n = static_cast<uint32_t>(nn);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

int cmd_batch(int argc, char** argv) {
  cxxopts::Options opts("brisk batch",
                        "Generate for every record of a JSONL file; the output continues where a killed run stopped.\n"
                        "Input lines: {\"id\":..., \"prompt\":\"...\"} or {\"id\":..., \"messages\":[{\"role\",\"content\"}...]},\n"
                        "optionally max_tokens, temperature, seed, stop (string or array), system, which override the options.\n"
                        "Output lines: index, id, text, prompt_tokens, completion_tokens, finish_reason\n"
                        "(stop, length, context_full), or index, id, error.\n"
                        "A resumed run must match the model, input and every option that asks for different text;\n"
                        "-t, --parallel, -b and the loading options (--plan...) are not recorded: they choose only how\n"
                        "the arithmetic is done, which can round a record differently (keep them, with --plan fixed,\n"
                        "where every run must agree bit for bit).\n"
                        "  brisk batch --merge OUT SHARD... joins shard outputs in input order.");
  // clang-format off
  opts.add_options()
    ("i,input", "input JSONL file", cxxopts::value<std::string>())
    ("merge", "join shard outputs (the remaining arguments) into OUT in input order", cxxopts::value<std::string>())
    ("shard", "K/N: process the K-th (counting from 0, as JOB_COMPLETION_INDEX) of N interleaved slices", cxxopts::value<std::string>())
    ("parallel", "records generated at once (0 = the most the memory plan allows, at most 64 slots)", cxxopts::value<int>()->default_value("0"))
    ("n,max-tokens", "tokens to generate per record unless it says otherwise", cxxopts::value<int>()->default_value("128"))
    ("seed", "random seed unless a record gives one", cxxopts::value<uint64_t>()->default_value("0"))
    ("system", "system prompt for records without one (applies the chat template)", cxxopts::value<std::string>()->default_value(""))
    ("chat-template", "chat format: llama2, llama3, chatml, mistral, phi3 (default: from the model)", cxxopts::value<std::string>()->default_value(""))
    ("ignore-eos", "keep generating after the end-of-sequence token")
    ("prefix-min", "shortest prompt prefix (tokens) that records share by forking a sequence that read it once; 0 = no sharing", cxxopts::value<int>()->default_value("8"))
    ("c,ctx-size", "context per sequence (0 = model's, at most 4096)", cxxopts::value<int>()->default_value("0"))
    ("b,batch-size", "most tokens per forward pass", cxxopts::value<int>()->default_value("512"))
    ("cache-type-k", "KV cache type for keys: auto, f32, f16, q8_0, q4_0", cxxopts::value<std::string>()->default_value("auto"))
    ("cache-type-v", "KV cache type for values: auto, f32, f16, q8_0, q4_0", cxxopts::value<std::string>()->default_value("auto"))
    ("no-pin", "do not pin threads to cores")
    ("progress-interval", "seconds between progress lines when stderr is not a terminal", cxxopts::value<double>()->default_value("10"))
    ("json", "print the final summary as JSON on stdout")
    ("json-summary", "same as --json")
    ("h,help", "show this help");
  // clang-format on
  add_sampling_options(opts);
  add_model_option(opts, "model (GGUF)");
  add_output_option(opts, "output JSONL file (resumed if it exists; OUTPUT.batch.json records what made it)");
  add_threads_option(opts);
  add_load_options(opts);
  opts.allow_unrecognised_options();
  cxxopts::ParseResult args;
  try {
    args = opts.parse(argc, argv);
  } catch (const std::exception& e) {
    return usage_error(e.what());
  }
  if (args.count("help")) {
    std::printf("%s\n", opts.help().c_str());
    return 0;
  }
  if (args.count("merge")) {
    std::vector<std::string> shards = args.unmatched();
    for (const std::string& s : shards)
      if (!s.empty() && s[0] == '-') return usage_error("unknown option '" + s + "'");
    std::string error;
    if (!batch::merge_shards(args["merge"].as<std::string>(), shards, &error)) {
      std::fprintf(stderr, "brisk batch: error: %s\n", error.c_str());
      return 1;
    }
    std::fprintf(stderr, "brisk batch: merged %zu shards into '%s'\n", shards.size(),
                 args["merge"].as<std::string>().c_str());
    return 0;
  }
  if (!args.unmatched().empty()) return usage_error("unexpected argument '" + args.unmatched()[0] + "'");
  if (!args.count("model")) return usage_error("no model given (-m MODEL.gguf)");
  if (!args.count("input")) return usage_error("no input given (-i IN.jsonl)");
  if (!args.count("output")) return usage_error("no output given (-o OUT.jsonl)");

  batch::RunSettings rs;
  rs.model_path = args["model"].as<std::string>();
  rs.input_path = args["input"].as<std::string>();
  rs.output_path = args["output"].as<std::string>();
  if (args.count("shard") && !parse_shard(args["shard"].as<std::string>(), &rs.shard_k, &rs.shard_n))
    return usage_error("--shard takes K/N with 0 <= K < N (e.g. 0/3, 1/3, 2/3)");
  rs.parallel = args["parallel"].as<int>();
  rs.n_threads = args["threads"].as<int>();
  rs.n_ctx = args["ctx-size"].as<int>();
  rs.n_batch = args["batch-size"].as<int>();
  rs.prefix_min = args["prefix-min"].as<int>();
  rs.progress_interval = args["progress-interval"].as<double>();
  rs.defaults.max_tokens = args["max-tokens"].as<int>();
  if (rs.parallel < 0 || rs.parallel > 65536 || rs.n_threads < 0 || rs.n_ctx < 0 || rs.n_batch <= 0 ||
      rs.prefix_min < 0 || rs.defaults.max_tokens < 0 || !(rs.progress_interval > 0))
    return usage_error("--parallel, -t, -c, -n and --prefix-min must not be negative, -b and --progress-interval "
                       "must be positive");
  if (!parse_type(args["cache-type-k"].as<std::string>(), &rs.cache_k) ||
      !parse_type(args["cache-type-v"].as<std::string>(), &rs.cache_v))
    return usage_error("unknown cache type (auto, f32, f16, q8_0, q4_0)");
  brisk_sampler_options& sp = rs.defaults.sampling;
  brisk_sampler_options_init(&sp);
  sampling_arg(args, &sp);
  sp.seed = args["seed"].as<uint64_t>();
  rs.defaults.system = args["system"].as<std::string>();
  rs.defaults.chat_template = args["chat-template"].as<std::string>();
  rs.stop_at_eos = !args.count("ignore-eos");
  rs.no_pin = args.count("no-pin") > 0;
  brisk_model_options_init(&rs.load);
  if (!apply_load_options(args, &rs.load, &rs.plan_cache)) return usage_error("--plan must be auto, fixed or measure");
  rs.json_summary = args.count("json") || args.count("json-summary");
  return batch::run(rs);
}

}  // namespace brisk::tools
