// brisk run: evaluate a prompt and stream a continuation to stdout.
// stdout carries only the prompt and the generated text; everything else
// (speeds, errors) goes to stderr so the output can be piped.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cxxopts.hpp>
#include <string>
#include <vector>

#include "brisk/brisk.h"
#include "commands.h"
#include "chat.h"
#include "common.h"

namespace brisk::tools {

namespace {

volatile std::sig_atomic_t g_interrupted = 0;
void on_sigint(int) { g_interrupted = 1; }
int abort_requested(void*) { return g_interrupted; }

int print_token(void*, int32_t, const char* text, size_t len) {
  std::fwrite(text, 1, len, stdout);
  std::fflush(stdout);
  return g_interrupted;
}

}  // namespace

int cmd_run(int argc, char** argv) {
  cxxopts::Options opts("brisk run", "Generate text from a prompt; the text streams to stdout.");
  // clang-format off
  opts.add_options()
    ("m,model", "model file (GGUF)", cxxopts::value<std::string>())
    ("p,prompt", "prompt text", cxxopts::value<std::string>()->default_value(""))
    ("f,file", "read the prompt from a file", cxxopts::value<std::string>())
    ("n,n-predict", "tokens to generate", cxxopts::value<int>()->default_value("128"))
    ("temp", "temperature; 0 = greedy", cxxopts::value<float>()->default_value("0.8"))
    ("top-k", "keep the k most likely tokens (0 = off)", cxxopts::value<int>()->default_value("40"))
    ("top-p", "keep the smallest set with this probability mass (1 = off)", cxxopts::value<float>()->default_value("0.95"))
    ("min-p", "drop tokens below min-p x the top probability (0 = off)", cxxopts::value<float>()->default_value("0.05"))
    ("repeat-penalty", "penalty for recently seen tokens (1 = off)", cxxopts::value<float>()->default_value("1.0"))
    ("repeat-last-n", "how many recent tokens the penalty looks at", cxxopts::value<int>()->default_value("64"))
    ("seed", "random seed (same seed, same text)", cxxopts::value<uint64_t>()->default_value("0"))
    ("t,threads", "threads (0 = one per physical core)", cxxopts::value<int>()->default_value("0"))
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
    ("h,help", "show this help");
  // clang-format on
  cxxopts::ParseResult args;
  try {
    args = opts.parse(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "brisk run: error: %s (see 'brisk run --help')\n", e.what());
    return 2;
  }
  if (args.count("help")) {
    std::printf("%s\n", opts.help().c_str());
    return 0;
  }
  if (!args.count("model")) {
    std::fprintf(stderr, "brisk run: error: no model given (-m MODEL.gguf)\n");
    return 2;
  }
  const int n_predict = args["n-predict"].as<int>();
  const int n_threads = args["threads"].as<int>();
  const int n_ctx = args["ctx-size"].as<int>();
  const int n_batch = args["batch-size"].as<int>();
  if (n_predict < 0 || n_threads < 0 || n_ctx < 0 || n_batch <= 0) {
    std::fprintf(stderr, "brisk run: error: -n, -t and -c must not be negative, -b must be positive\n");
    return 2;
  }
  int32_t cache_k = 0, cache_v = 0;
  if (!parse_type(args["cache-type-k"].as<std::string>(), &cache_k) ||
      !parse_type(args["cache-type-v"].as<std::string>(), &cache_v)) {
    std::fprintf(stderr, "brisk run: error: unknown cache type (auto, f32, f16, q8_0, q4_0)\n");
    return 2;
  }
  std::string prompt = args["prompt"].as<std::string>();
  if (args.count("file") && !read_file("run", args["file"].as<std::string>(), &prompt)) return 1;

  brisk_model* model = nullptr;
  brisk_model_options mo;
  brisk_model_options_init(&mo);
  mo.verify = args.count("verify") ? 1 : 0;
  brisk_status st = brisk_model_open(args["model"].as<std::string>().c_str(), &mo, &model);
  if (st != BRISK_OK) return report("run", st);

  std::signal(SIGINT, on_sigint);
  brisk_session_options so;
  brisk_session_options_init(&so);
  so.n_ctx = static_cast<uint32_t>(n_ctx);
  so.n_threads = static_cast<uint32_t>(n_threads);
  so.n_batch = static_cast<uint32_t>(n_batch);
  so.abort_fn = abort_requested;
  so.cache_type_k = cache_k;
  so.cache_type_v = cache_v;
  so.no_pin = args.count("no-pin") ? 1 : 0;
  so.pin_caller = !so.no_pin;  // the CLI's own main thread: pinning it is ours to decide
  brisk_sampler_options sp;
  brisk_sampler_options_init(&sp);
  sp.temperature = args["temp"].as<float>();
  sp.top_k = args["top-k"].as<int>();
  sp.top_p = args["top-p"].as<float>();
  sp.min_p = args["min-p"].as<float>();
  sp.repeat_penalty = args["repeat-penalty"].as<float>();
  sp.repeat_last_n = args["repeat-last-n"].as<int>();
  sp.seed = args["seed"].as<uint64_t>();
  brisk_session* session = nullptr;
  brisk_sampler* sampler = nullptr;
  std::vector<int32_t> tokens;
  size_t n_gen = 0;
  double t0 = 0, t1 = 0, t2 = 0;
  int rc = 0;
  bool chat_done = false;
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

    std::fwrite(prompt.data(), 1, prompt.size(), stdout);
    std::fflush(stdout);
    t0 = now_seconds();
    if ((st = brisk_session_eval(session, tokens.data(), tokens.size())) != BRISK_OK) break;
    t1 = now_seconds();
    brisk_generate_options go;
    brisk_generate_options_init(&go);
    go.max_tokens = n_predict;
    go.stop_at_eos = args.count("ignore-eos") ? 0 : 1;
    go.token_fn = print_token;
    brisk_stop_reason reason;
    st = brisk_generate(session, sampler, &go, &n_gen, &reason);
    t2 = now_seconds();
    std::printf("\n");
    std::fflush(stdout);
  } while (false);

  if (st != BRISK_OK) {
    std::fflush(stdout);
    rc = report("run", st);
  } else if (rc == 0 && !chat_done) {
    std::fprintf(stderr, "prompt: %zu tokens, %.2f tokens/s | generation: %zu tokens, %.2f tokens/s\n",
                 tokens.size(), tokens.size() / std::max(t1 - t0, 1e-9), n_gen,
                 n_gen > 0 ? n_gen / std::max(t2 - t1, 1e-9) : 0.0);
  }
  brisk_sampler_free(sampler);
  brisk_session_free(session);
  brisk_model_close(model);
  return rc;
}

}  // namespace brisk::tools
