// SPDX-License-Identifier: MIT
// brisk ppl: perplexity with llama-perplexity's protocol and, against a base
// model, KL divergence and same-top-token rate (llama.cpp's --kl-divergence).
#include <cstdio>
#include <cxxopts.hpp>
#include <string>

#include "brisk/brisk.h"
#include "brisk/brisk_experimental.h"
#include "commands.h"
#include "common.h"
#include "progress.h"
#include "load_options.h"

namespace brisk::tools {

namespace {

const char* kProtocol =
    "Protocol (llama-perplexity's, the default): the text is tokenized as one string with BOS and\n"
    "cut into floor(n/ctx) chunks of ctx tokens; each chunk is evaluated from an empty cache with\n"
    "its first token replaced by BOS; the NLL is averaged over the predictions at positions\n"
    "ctx/2 .. ctx-2 (127 per chunk at -c 256). --chunking prepend tokenizes without BOS and\n"
    "evaluates [BOS] + ctx-1 tokens per chunk; --score all scores every prediction; --chars N\n"
    "uses the first N characters (the stories260K reference: -c 128 --chunks 8 --chars 20000\n"
    "--chunking prepend --score all). With --base: KL(base || model) per scored position, its\n"
    "mean +- standard error, median, 99th percentile and maximum; same-top-token %; PPL(model) -\n"
    "PPL(base) with an error from the paired differences.";

double val(const brisk_ppl_result* r, const char* key) {
  double v = 0;
  brisk_ppl_result_value(r, key, &v);
  return v;
}

}  // namespace

int cmd_ppl(int argc, char** argv) {
  cxxopts::Options opts("brisk ppl", std::string("Perplexity (and KL divergence against a base model).\n\n") + kProtocol);
  // clang-format off
  add_model_option(opts, "model (GGUF)");
  opts.add_options()
    ("f,file", "text file", cxxopts::value<std::string>())
    ("base", "base model for KL divergence (e.g. the F32 original)", cxxopts::value<std::string>())
    ("c,ctx-size", "tokens per chunk (0 = min(training context, 512))", cxxopts::value<int>()->default_value("0"))
    ("chunks", "at most this many chunks (0 = all)", cxxopts::value<int>()->default_value("0"))
    ("spread", "with --chunks: evenly spaced chunks over the whole text, not the first ones")
    ("base-cache", "base log-probabilities file: written with --base, used instead of a base model without",
     cxxopts::value<std::string>())
    ("chunking", "replace (llama-perplexity) or prepend", cxxopts::value<std::string>()->default_value("replace"))
    ("score", "second-half (llama-perplexity) or all", cxxopts::value<std::string>()->default_value("second-half"))
    ("chars", "use only the first N characters of the file", cxxopts::value<long long>()->default_value("-1"))
    ("cache-type-k", "KV cache type for keys: auto, f32, f16, q8_0, q4_0", cxxopts::value<std::string>()->default_value("auto"))
    ("cache-type-v", "KV cache type for values", cxxopts::value<std::string>()->default_value("auto"));
  // clang-format on
  add_threads_option(opts);
  add_json_option(opts);
  add_load_options(opts);
  cxxopts::ParseResult args;
  int exit_code = 0;
  if (!parse_command("ppl", opts, argc, argv, &args, &exit_code)) return exit_code;
  std::string model_path;
  model_arg("ppl", args, &model_path);
  if (model_path.empty() || !args.count("file")) return usage_error("ppl", "-m MODEL and -f TEXT are required");
  const std::string chunking = args["chunking"].as<std::string>(), score = args["score"].as<std::string>();
  if (chunking != "replace" && chunking != "prepend") return usage_error("ppl", "--chunking is replace or prepend");
  if (score != "second-half" && score != "all") return usage_error("ppl", "--score is second-half or all");
  if (args["ctx-size"].as<int>() < 0 || args["chunks"].as<int>() < 0)
    return usage_error("ppl", "-c and --chunks must not be negative");
  int32_t cache_k, cache_v;
  if (!parse_type(args["cache-type-k"].as<std::string>(), &cache_k) ||
      !parse_type(args["cache-type-v"].as<std::string>(), &cache_v))
    return usage_error("ppl", "unknown cache type (auto, f32, f16, q8_0, q4_0)");
  std::string text;
  if (!read_file("ppl", args["file"].as<std::string>(), &text)) return 1;
  brisk_model* model = nullptr;
  brisk_model* base = nullptr;
  brisk_model_options mo;
  brisk_model_options_init(&mo);
  std::string plan_cache;
  if (!apply_load_options(args, &mo, &plan_cache))
    return usage_error("ppl", "--plan must be auto, fixed or measure");
  brisk_status st = brisk_model_open(model_path.c_str(), &mo, &model);
  if (st != BRISK_OK) return report("ppl", st);
  if (args.count("base") && (st = brisk_model_open(args["base"].as<std::string>().c_str(), &mo, &base)) != BRISK_OK) {
    brisk_model_close(model);
    return report("ppl", st);
  }
  brisk_ppl_options o;
  brisk_ppl_options_init(&o);
  o.n_ctx = static_cast<uint32_t>(args["ctx-size"].as<int>());
  o.max_chunks = static_cast<uint32_t>(args["chunks"].as<int>());
  o.chunking = chunking == "prepend" ? BRISK_PPL_CHUNK_PREPEND_BOS : BRISK_PPL_CHUNK_REPLACE_BOS;
  o.scoring = score == "all" ? BRISK_PPL_SCORE_ALL : BRISK_PPL_SCORE_SECOND_HALF;
  o.max_chars = args["chars"].as<long long>();
  o.n_threads = threads_arg(args);
  o.spread_chunks = args.count("spread") ? 1 : 0;
  o.cache_type_k = cache_k;
  o.cache_type_v = cache_v;
  std::string base_cache;
  if (args.count("base-cache")) {
    base_cache = args["base-cache"].as<std::string>();
    o.base_cache = base_cache.c_str();
  }
  Progress progress("chunks");
  o.progress_fn = Progress::callback;
  o.progress_user_data = &progress;
  o.abort_fn = abort_requested;
  catch_sigint();
  brisk_ppl_result* r = nullptr;
  const double t0 = now_seconds();
  st = brisk_perplexity(model, base, text.data(), text.size(), &o, &r);
  progress.finish();
  int rc = 0;
  if (st != BRISK_OK) {
    rc = report("ppl", st);
  } else if (args.count("json")) {
    size_t need = 0;
    brisk_ppl_result_json(r, nullptr, 0, &need);
    std::string js(need, '\0');
    brisk_ppl_result_json(r, js.data(), js.size(), &need);
    std::printf("%s\n", js.c_str());
  } else {
    std::printf("chunks %.0f, scored tokens %.0f (text %.0f tokens), %.1f s\n", val(r, "chunks"),
                val(r, "scored_tokens"), val(r, "text_tokens"), now_seconds() - t0);
    std::printf("PPL = %.6f +/- %.5f   (mean NLL %.6f)\n", val(r, "ppl"), val(r, "ppl_error"), val(r, "mean_nll"));
    double has_base = 0;
    if (brisk_ppl_result_value(r, "base_ppl", &has_base) == BRISK_OK) {
      std::printf("base PPL          %.6f +/- %.5f\n", val(r, "base_ppl"), val(r, "base_ppl_error"));
      std::printf("PPL - base PPL    %.6f +/- %.6f\n", val(r, "delta_ppl"), val(r, "delta_ppl_error"));
      std::printf("mean ln(PPL/base) %.6f +/- %.6f\n", val(r, "ln_ppl_ratio"), val(r, "ln_ppl_ratio_error"));
      std::printf("mean KLD          %.6f +/- %.6f\n", val(r, "kld_mean"), val(r, "kld_error"));
      std::printf("median KLD        %.6f   99%% KLD %.6f   99.9%% KLD %.6f   max KLD %.6f\n", val(r, "kld_median"),
                  val(r, "kld_p99"), val(r, "kld_p99.9"), val(r, "kld_max"));
      std::printf("same top token    %.3f +/- %.3f %%\n", val(r, "same_top_pct"), val(r, "same_top_error"));
    }
  }
  brisk_ppl_result_free(r);
  brisk_model_close(base);
  brisk_model_close(model);
  return rc;
}

}  // namespace brisk::tools
