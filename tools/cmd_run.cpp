// SPDX-License-Identifier: MIT
// brisk run: evaluate a prompt and stream a continuation to stdout.
// stdout carries only the prompt and the generated text; everything else
// (speeds, errors; with --json the timings as JSON) goes to stderr so the
// output can be piped.
#include <algorithm>
#include <cstdio>
#include <cxxopts.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "brisk/brisk.h"
#include "commands.h"
#include "chat.h"
#include "common.h"
#include "progress.h"
#include "load_options.h"

namespace brisk::tools {

namespace {

int print_token(void*, int32_t, const char* text, size_t len) {
  std::fwrite(text, 1, len, stdout);
  std::fflush(stdout);
  return g_interrupted;
}

// Puts the longest saved prefix of the prompt into the session; *reused
// tokens need no evaluation. A file from another model, other cache types or
// a damaged one is refused (the error says why) rather than overwritten.
brisk_status load_prompt_cache(brisk_session* session, const std::string& path, const std::vector<int32_t>& tokens,
                               size_t* reused, bool* save) {
  *save = true;
  if (std::FILE* f = std::fopen(path.c_str(), "rb")) {
    std::fclose(f);
  } else {
    return BRISK_OK;  // missing: evaluate and save
  }
  size_t n = 0;
  brisk_status st = brisk_state_file_tokens(path.c_str(), nullptr, 0, &n);
  if (st != BRISK_OK && st != BRISK_ERR_BUFFER_TOO_SMALL) return st;
  std::vector<int32_t> cached(n);
  if ((st = brisk_state_file_tokens(path.c_str(), cached.data(), cached.size(), &n)) != BRISK_OK) return st;
  size_t common = 0;
  while (common < cached.size() && common < tokens.size() && cached[common] == tokens[common]) ++common;
  if (common == 0) return BRISK_OK;
  if ((st = brisk_session_load_state(session, nullptr, path.c_str())) != BRISK_OK) return st;
  *save = cached != tokens;
  // Keep the common part; at least the prompt's last token is evaluated
  // again unless the cache holds exactly this prompt (its logits are saved).
  const size_t keep = *save ? std::min(common, tokens.size() - 1) : common;
  if (keep < cached.size() && (st = brisk_session_truncate(session, static_cast<uint32_t>(keep))) != BRISK_OK)
    return st;
  *reused = keep;
  std::fprintf(stderr, "prompt cache: reused %zu of %zu prompt tokens from '%s'\n", keep, tokens.size(), path.c_str());
  return BRISK_OK;
}

void save_prompt_cache(const brisk_session* session, const std::string& path, const std::vector<int32_t>& tokens) {
  if (brisk_session_save_state(session, nullptr, tokens.data(), tokens.size(), path.c_str()) == BRISK_OK)
    std::fprintf(stderr, "prompt cache: saved %zu prompt tokens to '%s'\n", tokens.size(), path.c_str());
  else
    std::fprintf(stderr, "brisk run: warning: prompt cache not saved: %s\n", brisk_last_error());
}

}  // namespace

int cmd_run(int argc, char** argv) {
  cxxopts::Options opts("brisk run", "Generate text from a prompt; the text streams to stdout.");
  // clang-format off
  add_model_option(opts, "model (GGUF)");
  opts.add_options()
    ("p,prompt", "prompt text", cxxopts::value<std::string>()->default_value(""))
    ("f,file", "read the prompt from a file", cxxopts::value<std::string>())
    ("n,n-predict", "tokens to generate", cxxopts::value<int>()->default_value("128"))
    ("seed", "random seed (same seed, same text)", cxxopts::value<uint64_t>()->default_value("0"))
    ("c,ctx-size", "context length (0 = model's, at most 4096)", cxxopts::value<int>()->default_value("0"))
    ("b,batch-size", "prompt tokens per forward pass", cxxopts::value<int>()->default_value("512"))
    ("cache-type-k", "KV cache type for keys: auto, f32, f16, q8_0, q4_0", cxxopts::value<std::string>()->default_value("auto"))
    ("cache-type-v", "KV cache type for values: auto, f32, f16, q8_0, q4_0", cxxopts::value<std::string>()->default_value("auto"))
    ("no-pin", "do not pin threads to cores")
    ("chat", "interactive chat: one user message per line on stdin, replies on stdout")
    ("system", "system prompt for --chat", cxxopts::value<std::string>()->default_value(""))
    ("chat-template", "chat format for --chat: llama2, llama3, chatml, mistral, phi3 (default: from the model)", cxxopts::value<std::string>()->default_value(""))
    ("ignore-eos", "keep generating after the end-of-sequence token")
    ("verify", "check the model's embedded checksums before running")
    ("v,verbose", "print the model and the kernel plan on stderr before generating")
    ("prompt-cache", "file of the prompt's evaluated state: reused when the prompt starts the same, saved when missing or different", cxxopts::value<std::string>());
  // clang-format on
  add_sampling_options(opts);
  add_threads_option(opts);
  add_json_option(opts, "on stderr after the text: prompt and generation tokens, seconds and tokens/s (not with --chat)");
  add_load_options(opts);
  cxxopts::ParseResult args;
  int exit_code = 0;
  if (!parse_command("run", opts, argc, argv, &args, &exit_code)) return exit_code;
  std::string model_path;
  model_arg("run", args, &model_path);
  if (model_path.empty()) return usage_error("run", "no model given (-m MODEL.gguf)");
  const int n_predict = args["n-predict"].as<int>();
  const int n_ctx = args["ctx-size"].as<int>();
  const int n_batch = args["batch-size"].as<int>();
  if (n_predict < 0 || n_ctx < 0 || n_batch <= 0)
    return usage_error("run", "-n and -c must not be negative, -b must be positive");
  if (args.count("json") && args.count("chat")) return usage_error("run", "--json reports one generation: not with --chat");
  int32_t cache_k = 0, cache_v = 0;
  if (!parse_type(args["cache-type-k"].as<std::string>(), &cache_k) ||
      !parse_type(args["cache-type-v"].as<std::string>(), &cache_v))
    return usage_error("run", "unknown cache type (auto, f32, f16, q8_0, q4_0)");
  std::string prompt = args["prompt"].as<std::string>();
  if (args.count("file") && !read_file("run", args["file"].as<std::string>(), &prompt)) return 1;

  brisk_model* model = nullptr;
  brisk_model_options mo;
  brisk_model_options_init(&mo);
  mo.verify = args.count("verify") ? 1 : 0;
  std::string plan_cache;
  if (!apply_load_options(args, &mo, &plan_cache))
    return usage_error("run", "--plan must be auto, fixed or measure");
  brisk_status st = brisk_model_open(model_path.c_str(), &mo, &model);
  if (st != BRISK_OK) return report("run", st);
  if (args.count("verbose")) {
    std::string text(4096, '\0');
    size_t need = 0;
    brisk_model_describe(model, text.data(), text.size(), &need);
    std::fprintf(stderr, "model: %s\n", text.c_str());
    std::fprintf(stderr, "%s", kernel_plan_text(model).c_str());
  }

  catch_sigint();
  brisk_session_options so;
  brisk_session_options_init(&so);
  so.n_ctx = static_cast<uint32_t>(n_ctx);
  so.n_threads = threads_arg(args);
  so.n_batch = static_cast<uint32_t>(n_batch);
  so.abort_fn = abort_requested;
  so.cache_type_k = cache_k;
  so.cache_type_v = cache_v;
  so.no_pin = args.count("no-pin") ? 1 : 0;
  so.pin_caller = !so.no_pin;  // the CLI's own main thread: pinning it is ours to decide
  brisk_sampler_options sp;
  brisk_sampler_options_init(&sp);
  sampling_arg(args, &sp);
  sp.seed = args["seed"].as<uint64_t>();
  brisk_session* session = nullptr;
  brisk_sampler* sampler = nullptr;
  std::vector<int32_t> tokens;
  size_t n_gen = 0, reused = 0;
  double t0 = 0, t1 = 0, t2 = 0;
  int rc = 0;
  bool chat_done = false;
  const char* reason_name = "";
  do {
    if ((st = brisk_session_create(model, &so, &session)) != BRISK_OK) break;
    size_t needed = 0;
    st = brisk_tokenize(model, prompt.data(), prompt.size(), BRISK_TOKENIZE_ADD_BOS, nullptr, 0, &needed);
    if (st != BRISK_OK && st != BRISK_ERR_BUFFER_TOO_SMALL) break;
    tokens.resize(needed);
    if ((st = brisk_tokenize(model, prompt.data(), prompt.size(), BRISK_TOKENIZE_ADD_BOS, tokens.data(),
                             tokens.size(), &needed)) != BRISK_OK)
      break;
    if ((st = brisk_sampler_create(&sp, &sampler)) != BRISK_OK) break;
    if (args.count("chat")) {
      if (args.count("prompt-cache")) {
        std::fprintf(stderr, "brisk run: error: --prompt-cache does not apply to --chat\n");
        rc = 2;
        break;
      }
      ChatSettings cs;
      cs.system_prompt = args["system"].as<std::string>();
      cs.template_name = args["chat-template"].as<std::string>();
      cs.n_predict = n_predict;
      rc = run_chat(model, session, sampler, cs);
      chat_done = true;
      break;
    }
    if (tokens.empty()) {
      std::fprintf(stderr, "brisk run: error: the prompt is empty and the model adds no BOS token\n");
      rc = 1;
      break;
    }
    for (int32_t t : tokens) brisk_sampler_accept(sampler, t);

    t0 = now_seconds();
    bool save_cache = false;
    if (args.count("prompt-cache") &&
        (st = load_prompt_cache(session, args["prompt-cache"].as<std::string>(), tokens, &reused, &save_cache)) !=
            BRISK_OK)
      break;
    std::fwrite(prompt.data(), 1, prompt.size(), stdout);
    std::fflush(stdout);
    if (reused < tokens.size() &&
        (st = brisk_session_eval(session, tokens.data() + reused, tokens.size() - reused)) != BRISK_OK)
      break;
    if (save_cache) save_prompt_cache(session, args["prompt-cache"].as<std::string>(), tokens);
    t1 = now_seconds();
    brisk_generate_options go;
    brisk_generate_options_init(&go);
    go.max_tokens = n_predict;
    go.stop_at_eos = args.count("ignore-eos") ? 0 : 1;
    go.token_fn = print_token;
    brisk_stop_reason reason = BRISK_STOP_MAX_TOKENS;
    st = brisk_generate(session, sampler, &go, &n_gen, &reason);
    reason_name = reason == BRISK_STOP_EOS             ? "eos"
                  : reason == BRISK_STOP_CALLBACK      ? "interrupted"
                  : reason == BRISK_STOP_CONTEXT_FULL ? "context_full"
                                                       : "max_tokens";
    t2 = now_seconds();
    std::printf("\n");
    std::fflush(stdout);
  } while (false);

  if (st != BRISK_OK) {
    std::fflush(stdout);
    rc = report("run", st);
  } else if (rc == 0 && !chat_done) {
    const double prompt_tps = tokens.size() / std::max(t1 - t0, 1e-9);
    const double gen_tps = n_gen > 0 ? n_gen / std::max(t2 - t1, 1e-9) : 0.0;
    if (args.count("json"))
      print_json(stderr, {{"prompt_tokens", tokens.size()},
                          {"prompt_cached_tokens", reused},
                          {"prompt_seconds", t1 - t0},
                          {"prompt_tokens_per_s", prompt_tps},
                          {"gen_tokens", n_gen},
                          {"gen_seconds", t2 - t1},
                          {"gen_tokens_per_s", gen_tps},
                          {"stop_reason", reason_name}});
    else
      std::fprintf(stderr, "prompt: %zu tokens%s, %.2f tokens/s | generation: %zu tokens, %.2f tokens/s\n",
                   tokens.size(), reused ? (" (" + std::to_string(reused) + " from the cache)").c_str() : "",
                   prompt_tps, n_gen, gen_tps);
  }
  brisk_sampler_free(sampler);
  brisk_session_free(session);
  brisk_model_close(model);
  return rc;
}

}  // namespace brisk::tools
