// brisk ppl: perplexity with llama-perplexity's protocol and, against a base
// model, KL divergence and same-top-token rate (llama.cpp's --kl-divergence).
#include <csignal>
#include <cstdio>
#include <cxxopts.hpp>
#include <string>

#include "brisk/brisk.h"
#include "brisk/brisk_experimental.h"
#include "commands.h"
#include "common.h"

namespace brisk::tools {

namespace {

volatile std::sig_atomic_t g_interrupted = 0;
void on_sigint(int) { g_interrupted = 1; }
int abort_requested(void*) { return g_interrupted; }
int on_progress(void* ud, const char*, uint64_t done, uint64_t total, const char*) {
  static_cast<ProgressLine*>(ud)->update(done, total, "chunks");
  return 0;
}

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
  opts.add_options()
    ("m,model", "model (GGUF)", cxxopts::value<std::string>())
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
    ("t,threads", "threads (0 = one per physical core)", cxxopts::value<int>()->default_value("0"))
    ("cache-type-k", "KV cache type for keys: auto, f32, f16, q8_0, q4_0", cxxopts::value<std::string>()->default_value("auto"))
    ("cache-type-v", "KV cache type for values", cxxopts::value<std::string>()->default_value("auto"))
    ("json", "print the result as JSON on stdout")
    ("h,help", "show this help");
  // clang-format on
  cxxopts::ParseResult args;
  try {
    args = opts.parse(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "brisk ppl: error: %s (see 'brisk ppl --help')\n", e.what());
    return 2;
  }
  if (args.count("help")) {
    std::printf("%s\n", opts.help().c_str());
    return 0;
  }
  if (!args.count("model") || !args.count("file")) {
    std::fprintf(stderr, "brisk ppl: error: -m MODEL and -f TEXT are required\n");
    return 2;
  }
  const std::string chunking = args["chunking"].as<std::string>(), score = args["score"].as<std::string>();
  if ((chunking != "replace" && chunking != "prepend") || (score != "second-half" && score != "all") ||
      args["ctx-size"].as<int>() < 0 || args["chunks"].as<int>() < 0 || args["threads"].as<int>() < 0) {
    std::fprintf(stderr, "brisk ppl: error: bad option value (see 'brisk ppl --help')\n");
    return 2;
  }
  int32_t cache_k, cache_v;
  if (!parse_type(args["cache-type-k"].as<std::string>(), &cache_k) ||
      !parse_type(args["cache-type-v"].as<std::string>(), &cache_v)) {
    std::fprintf(stderr, "brisk ppl: error: unknown cache type (auto, f32, f16, q8_0, q4_0)\n");
    return 2;
  }
  std::string text;
  if (!read_file("ppl", args["file"].as<std::string>(), &text)) return 1;
  brisk_model* model = nullptr;
  brisk_model* base = nullptr;
  brisk_status st = brisk_model_open(args["model"].as<std::string>().c_str(), nullptr, &model);
  if (st != BRISK_OK) return report("ppl", st);
  if (args.count("base") && (st = brisk_model_open(args["base"].as<std::string>().c_str(), nullptr, &base)) != BRISK_OK) {
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
  o.n_threads = static_cast<uint32_t>(args["threads"].as<int>());
  o.spread_chunks = args.count("spread") ? 1 : 0;
  o.cache_type_k = cache_k;
  o.cache_type_v = cache_v;
  std::string base_cache;
  if (args.count("base-cache")) {
    base_cache = args["base-cache"].as<std::string>();
    o.base_cache = base_cache.c_str();
  }
  ProgressLine progress("ppl");
  o.progress_fn = on_progress;
  o.progress_user_data = &progress;
  o.abort_fn = abort_requested;
  std::signal(SIGINT, on_sigint);
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
