// SPDX-License-Identifier: MIT
// brisk bench: how fast does a model run on this machine, alone and with many
// sequences at once? Every figure is a median over repetitions, and decode
// speed is taken over the last tokens only (steady state, not the first burst).
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <cxxopts.hpp>
#include <filesystem>
#include <fstream>
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

// 512 characters of plain English: the default prompt.
const char kPrompt[] =
    "The old lighthouse keeper climbed the narrow stairs every evening, carrying a small lamp and a notebook. "
    "He wrote down the color of the sky, the direction of the wind, and the names of the ships that passed "
    "the rocks below. Nobody had asked him to keep these records, but he believed that one day someone would "
    "need them. When the storms came in the autumn, he stayed awake all night, watching the light turn slowly "
    "over the dark water. In the morning he would walk down to the harbor and tell the fishermen what he had "
    "seen during the night.";

struct Run {
  double prompt_tps = 0;  // prompt tokens evaluated per second (all sequences)
  double gen_tps = 0;     // generated tokens per second over the measured window (all sequences)
  double ttft_ms = 0;     // time to the first generated token of the first sequence
};

// A configuration's own clock: it runs only while that configuration's
// engine steps, so configurations stepped in turns (--interleave) each see
// just their own time.
struct StepClock {
  double elapsed = 0;     // seconds of this configuration's steps so far
  double step_start = 0;  // wall time the current step began
  double now() const { return elapsed + (now_seconds() - step_start); }
};

struct SeqClock {
  const StepClock* clock = nullptr;
  std::vector<double> t;  // the configuration's clock at each generated token
};

int on_token(void* ud, int32_t token, const char*, size_t) {
  auto* c = static_cast<SeqClock*>(ud);
  if (token >= 0) c->t.push_back(c->clock->now());
  return 0;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

uint64_t peak_rss_bytes() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<uint64_t>(ru.ru_maxrss) * 1024;
}

// Resets the kernel's peak-RSS counter so each configuration reports its own.
void reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  if (f) f << "5";
}

std::string default_history() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  std::string dir = xdg && *xdg ? std::string(xdg) + "/brisk" : std::string(home ? home : ".") + "/.cache/brisk";
  return dir + "/bench-history.jsonl";
}

// A comma-separated list's non-empty items.
std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) v.push_back(item);
  return v;
}

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    int x = std::stoi(item);
    if (x <= 0) throw std::invalid_argument("parallel counts must be positive");
    v.push_back(x);
  }
  if (v.empty()) throw std::invalid_argument("empty --parallel list");
  return v;
}

// One repetition of one configuration: P sequences, same prompt, greedy,
// exactly n_gen tokens each.
struct Repetition {
  brisk_engine* engine = nullptr;
  int parallel = 0;
  std::vector<brisk_sequence*> seqs;
  std::vector<SeqClock> clocks;
  StepClock clock;  // the clocks above point at it: a Repetition stays put
  uint32_t active = 1;

  Repetition() = default;
  Repetition(const Repetition&) = delete;
  Repetition& operator=(const Repetition&) = delete;

  brisk_status start(const std::vector<int32_t>& prompt, int n_gen) {
    seqs.assign(static_cast<size_t>(parallel), nullptr);
    clocks.assign(static_cast<size_t>(parallel), SeqClock{&clock, {}});
    brisk_sampler_options sp;
    brisk_sampler_options_init(&sp);
    sp.temperature = 0;
    brisk_status st = BRISK_OK;
    for (int i = 0; i < parallel && st == BRISK_OK; ++i) {
      if ((st = brisk_sequence_create(engine, &seqs[i])) != BRISK_OK) break;
      if ((st = brisk_sequence_add_tokens(seqs[i], prompt.data(), prompt.size())) != BRISK_OK) break;
      brisk_generate_options go;
      brisk_generate_options_init(&go);
      go.max_tokens = n_gen;
      go.stop_at_eos = 0;  // every sequence produces exactly n_gen tokens
      go.token_fn = on_token;
      go.token_user_data = &clocks[i];
      st = brisk_sequence_generate(seqs[i], &sp, &go);
    }
    return st;
  }
  brisk_status step() {
    clock.step_start = now_seconds();
    const brisk_status st = brisk_engine_step(engine, &active);
    clock.elapsed += now_seconds() - clock.step_start;
    return st;
  }
  ~Repetition() {
    for (brisk_sequence* s : seqs) brisk_sequence_free(s);
  }

  // The figures, on this configuration's clock (which starts at 0).
  Run result(size_t prompt_tokens, int window) const {
    // Prompt phase ends when the last sequence has its first token.
    double first_all = 0, first_any = 1e300, end_all = 0, window_start = 0;
    for (const SeqClock& c : clocks) {
      first_all = std::max(first_all, c.t.front());
      first_any = std::min(first_any, c.t.front());
      end_all = std::max(end_all, c.t.back());
      window_start = std::max(window_start, c.t[c.t.size() - 1 - static_cast<size_t>(window)]);
    }
    // The window: the last `window` tokens of every sequence, from the latest
    // sequence's window start to the last token.
    Run out;
    out.prompt_tps = static_cast<double>(prompt_tokens) * parallel / std::max(first_all, 1e-9);
    out.gen_tps = static_cast<double>(window) * parallel / std::max(end_all - window_start, 1e-9);
    out.ttft_ms = first_any * 1e3;
    return out;
  }
};

// One repetition of each engine's configuration, stepped in turns (a few
// engine steps each, round after round) so that a drifting machine load
// lands on all of them alike; each is timed on its own clock. A turn is
// kStepsPerTurn steps, not one: when the turn passes, the last engine's
// pool threads spin a little on the cores the next engine's threads need,
// which slows one-step turns noticeably at a single sequence (the fastest steps).
constexpr int kStepsPerTurn = 8;
bool run_together(const std::vector<std::pair<brisk_engine*, int>>& engines, const std::vector<int32_t>& prompt,
                  int n_gen, int window, std::vector<Run>* out) {
  std::vector<Repetition> reps(engines.size());
  brisk_status st = BRISK_OK;
  for (size_t i = 0; i < engines.size() && st == BRISK_OK; ++i) {
    reps[i].engine = engines[i].first;
    reps[i].parallel = engines[i].second;
    st = reps[i].start(prompt, n_gen);
  }
  for (bool any = true; st == BRISK_OK && any;) {
    any = false;
    for (Repetition& r : reps) {
      for (int i = 0; i < kStepsPerTurn && r.active != 0 && st == BRISK_OK; ++i) {
        st = r.step();
        any = true;
      }
    }
  }
  if (st != BRISK_OK) {
    report("bench", st);
    return false;
  }
  out->clear();
  for (const Repetition& r : reps) out->push_back(r.result(prompt.size(), window));
  return true;
}

}  // namespace

int cmd_bench(int argc, char** argv) {
  char shapes[512] = "";
  size_t needed = 0;
  brisk_synthetic_shapes(shapes, sizeof shapes, &needed);
  cxxopts::Options opts("brisk bench",
                        "Measure prompt and generation speed, single-stream and with many parallel sequences.\n"
                        "Synthetic shapes (random weights, no download): " + std::string(shapes));
  // clang-format off
  add_model_option(opts, "model (GGUF)");
  opts.add_options()
    ("synthetic", "use a random-weight model of this shape instead of a file", cxxopts::value<std::string>())
    ("type", "weight type of the synthetic model", cxxopts::value<std::string>()->default_value("q4_0"))
    ("p,prompt", "prompt text (default: a fixed 512-character paragraph)", cxxopts::value<std::string>())
    ("prompt-tokens", "use a prompt of exactly this many tokens instead", cxxopts::value<int>()->default_value("0"))
    ("n,n-gen", "tokens generated per sequence", cxxopts::value<int>()->default_value("150"))
    ("window", "decode speed is measured over the last N tokens", cxxopts::value<int>()->default_value("50"))
    ("parallel", "comma-separated counts of parallel sequences", cxxopts::value<std::string>()->default_value("1"))
    ("r,reps", "repetitions per configuration (median reported)", cxxopts::value<int>()->default_value("5"))
    ("cpu-list", "pin threads to these CPUs, e.g. 0,2,4-7", cxxopts::value<std::string>())
    ("no-pin", "do not pin threads")
    ("cache-type-k", "KV cache type for keys: auto, f32, f16, q8_0, q4_0; a comma-separated list runs each "
                     "(with the value type at the same place in --cache-type-v)",
     cxxopts::value<std::string>()->default_value("f16"))
    ("cache-type-v", "KV cache type for values (one, or as many as --cache-type-k)",
     cxxopts::value<std::string>()->default_value("f16"))
    ("b,batch-size", "most tokens per engine step", cxxopts::value<int>()->default_value("512"))
    ("history", "append results to this JSON-lines file", cxxopts::value<std::string>()->default_value(default_history()))
    ("no-history", "do not append to the history file")
    ("compare", "show the change against the last run of the same configuration")
    ("interleave", "with several configurations (--parallel counts, cache types, plans): run each one's repetition "
                   "together, the engines stepping in turns (8 steps each), each timed on its own clock, so that "
                   "changing machine load affects all alike (each one's peak RSS then includes every engine's cache)")
    ("bandwidth-mib", "before and after every repetition, measure the memory read bandwidth over a buffer of this "
                      "many MiB (their mean is the decode ceiling the 'bw use' column compares against; 0: skip)",
     cxxopts::value<int>()->default_value("512"));
  // clang-format on
  add_threads_option(opts);
  add_json_option(opts, "on stdout instead of the table, one object per configuration");
  add_load_options(opts, true);
  cxxopts::ParseResult args;
  int exit_code = 0;
  if (!parse_command("bench", opts, argc, argv, &args, &exit_code)) return exit_code;
  std::vector<int> parallels;
  try {
    parallels = parse_list(args["parallel"].as<std::string>());
  } catch (const std::exception& e) {
    return usage_error("bench", std::string("--parallel: ") + e.what());
  }
  if (args.count("model") == args.count("synthetic"))
    return usage_error("bench", "give exactly one of -m MODEL or --synthetic SHAPE");
  const int n_gen = args["n-gen"].as<int>(), reps = args["reps"].as<int>();
  const int window = std::min(args["window"].as<int>(), n_gen - 1);
  if (n_gen < 2 || reps < 1 || window < 1) return usage_error("bench", "need -n >= 2, --window >= 1 and -r >= 1");
  // KV cache types: K and V lists paired by position (a single V type
  // goes with every K type).
  struct CacheTypes {
    std::string k_name, v_name;
    int32_t k = 0, v = 0;
  };
  std::vector<CacheTypes> caches;
  {
    const std::vector<std::string> ks = split_list(args["cache-type-k"].as<std::string>());
    const std::vector<std::string> vs = split_list(args["cache-type-v"].as<std::string>());
    if (ks.empty() || vs.empty() || (vs.size() != 1 && vs.size() != ks.size())) {
      std::fprintf(stderr, "brisk bench: error: give one --cache-type-v, or as many as --cache-type-k\n");
      return 2;
    }
    for (size_t i = 0; i < ks.size(); ++i) {
      CacheTypes c{ks[i], vs.size() == 1 ? vs[0] : vs[i]};
      if (!parse_type(c.k_name, &c.k) || !parse_type(c.v_name, &c.v)) {
        std::fprintf(stderr, "brisk bench: error: unknown cache type in %s / %s\n", c.k_name.c_str(),
                     c.v_name.c_str());
        return 2;
      }
      caches.push_back(c);
    }
  }

  // The kernel plans: --plan modes and --plan-cache directories paired by
  // position (a single entry of either goes with every entry of the other).
  // Each opens the model anew: its own plan, its own repacked weights.
  struct Plan {
    std::string label, cache;
    brisk_model_options mo;
    brisk_model* model = nullptr;
    std::string text;  // the plan in use (brisk_model_kernel_plan)
  };
  std::vector<Plan> plans;
  {
    brisk_model_options base;
    brisk_model_options_init(&base);
    apply_read_options(args, &base);
    base.plan_threads = std::max(0, args["threads"].as<int>());  // plans measured with the threads that run
    const std::vector<std::string> modes = args.count("plan") ? split_list(args["plan"].as<std::string>())
                                                              : std::vector<std::string>{""};
    const std::vector<std::string> dirs = args.count("plan-cache") ? split_list(args["plan-cache"].as<std::string>())
                                                                   : std::vector<std::string>{""};
    if (modes.empty() || dirs.empty() || (modes.size() > 1 && dirs.size() > 1 && modes.size() != dirs.size()))
      return usage_error("bench", "give one --plan-cache, or as many as --plan");
    const size_t n = std::max(modes.size(), dirs.size());
    // Without --plan the library takes $BRISK_PLAN, else auto.
    const char* env = std::getenv("BRISK_PLAN");
    int64_t env_mode = 0;
    const std::string default_label = env && parse_plan_mode(env, &env_mode) ? env : "auto";
    for (size_t i = 0; i < n; ++i) {
      Plan p;
      p.mo = base;
      const std::string& mode = modes[modes.size() == 1 ? 0 : i];
      if (!mode.empty() && !parse_plan_mode(mode, &p.mo.plan_mode))
        return usage_error("bench", "--plan must be auto, fixed or measure (or a comma-separated list of them)");
      p.cache = dirs[dirs.size() == 1 ? 0 : i];
      p.label = !mode.empty() ? mode : default_label;
      if (dirs.size() > 1) p.label += ":" + p.cache;
      plans.push_back(p);
    }
    // Pointers into the vector only once it is complete.
    for (Plan& p : plans) p.mo.plan_cache_dir = p.cache.empty() ? nullptr : p.cache.c_str();
  }
  brisk_status st = BRISK_OK;
  std::string model_name;
  for (Plan& p : plans) {
    if (args.count("synthetic")) {
      brisk_synthesize_options so;
      brisk_synthesize_options_init(&so);
      std::string shape = args["synthetic"].as<std::string>(), type = args["type"].as<std::string>();
      so.shape = shape.c_str();
      so.weight_type = type.c_str();
      std::fprintf(stderr, "generating a synthetic %s model (%s)...\n", shape.c_str(), type.c_str());
      st = brisk_model_open_synthetic(&so, &p.mo, &p.model);
      model_name = "synthetic:" + shape;
    } else {
      const std::string path = args["model"].as<std::string>();
      st = brisk_model_open(path.c_str(), &p.mo, &p.model);
      model_name = std::filesystem::path(path).filename().string();
    }
    if (st != BRISK_OK) {
      const int code = report("bench", st);
      for (Plan& q : plans) brisk_model_close(q.model);
      return code;
    }
    // Which kernels run: measured figures mean little without it.
    p.text = kernel_plan_text(p.model);
  }
  brisk_model* model = plans[0].model;  // tokenizer and file facts: the same file for every plan
  char wtype[32] = "";
  brisk_model_weight_type(model, wtype, sizeof wtype, &needed);

  // The prompt.
  std::string text = args.count("prompt") ? args["prompt"].as<std::string>() : std::string(kPrompt);
  std::vector<int32_t> prompt(static_cast<size_t>(text.size()) + 8);
  st = brisk_tokenize(model, text.data(), text.size(), BRISK_TOKENIZE_ADD_BOS, prompt.data(), prompt.size(), &needed);
  if (st != BRISK_OK) return report("bench", st);
  prompt.resize(needed);
  if (const int want = args["prompt-tokens"].as<int>(); want > 0) {
    // Repeat the text's tokens (after BOS) to exactly `want` tokens.
    std::vector<int32_t> body(prompt.begin() + (prompt.size() > 1 ? 1 : 0), prompt.end());
    prompt.resize(1);
    while (static_cast<int>(prompt.size()) < want) prompt.push_back(body[(prompt.size() - 1) % body.size()]);
  }

  const std::string history = args["history"].as<std::string>();
  std::vector<nlohmann::json> past;
  if (args.count("compare")) {
    std::ifstream in(history);
    std::string line;
    while (std::getline(in, line)) {
      try {
        past.push_back(nlohmann::json::parse(line));
      } catch (...) {
      }
    }
  }

  const bool json = args.count("json") > 0;
  const bool plan_column = plans.size() > 1;
  if (!json)
    for (const Plan& p : plans)
      std::fprintf(stderr, "%s%s", plan_column ? ("plan " + p.label + ": ").c_str() : "", p.text.c_str());
  if (!json)
    std::printf("%-24s %-6s %-9s %3s %4s %8s %14s %22s %7s %9s %9s%s\n", "model", "type", "kv", "thr", "par", "prompt",
                "prompt tok/s", "gen tok/s (min-max)", "bw use", "ttft ms", "RSS MiB", plan_column ? "  plan" : "");
  const int bw_mib = std::max(0, args["bandwidth-mib"].as<int>());
  const uint64_t model_bytes = brisk_model_file_size(model);
  // What a decode step reads: not the file (untied token embeddings are
  // read a row per token).
  const uint64_t step_bytes = brisk_model_decode_bytes(model);
  int rc = 0;
  std::string cpu_list = args.count("cpu-list") ? args["cpu-list"].as<std::string>() : "";
  const bool interleave = args.count("interleave") > 0;

  Progress progress("repetitions");
  // One configuration: its engine and its repetitions.
  struct Config {
    int parallel = 0;
    CacheTypes cache;
    const Plan* plan = nullptr;
    brisk_engine* engine = nullptr;
    std::string desc;
    int threads = 0;
    std::vector<double> pp, tg, ttft;
    // Read bandwidth (GB/s) measured just before and just after each
    // repetition (their mean is the ceiling that repetition ran against).
    std::vector<double> bw_before, bw_after;
    uint64_t peak_rss = 0;   // over this configuration's repetitions
  };
  std::vector<Config> configs;
  for (const Plan& pl : plans)
    for (const CacheTypes& ct : caches)
      for (int p : parallels) {
        configs.emplace_back();
        configs.back().parallel = p;
        configs.back().cache = ct;
        configs.back().plan = &pl;
      }

  auto create = [&](Config& c) -> bool {
    brisk_engine_options eo;
    brisk_engine_options_init(&eo);
    eo.n_seq_max = static_cast<uint32_t>(c.parallel);
    eo.n_ctx = static_cast<uint32_t>(prompt.size() + n_gen + 1);
    eo.n_threads = threads_arg(args);
    eo.n_batch = static_cast<uint32_t>(std::max(1, args["batch-size"].as<int>()));
    eo.cache_type_k = c.cache.k;
    eo.cache_type_v = c.cache.v;
    eo.no_pin = args.count("no-pin") ? 1 : 0;
    eo.pin_caller = !eo.no_pin;  // the CLI's own main thread: pinning it is ours to decide
    eo.cpu_list = cpu_list.empty() ? nullptr : cpu_list.c_str();
    if ((st = brisk_engine_create(c.plan->model, &eo, &c.engine)) != BRISK_OK) {
      rc = report("bench", st);
      return false;
    }
    char desc[512] = "";
    brisk_engine_describe(c.engine, desc, sizeof desc, &needed);
    c.desc = desc;
    c.threads = static_cast<int>(brisk_engine_n_threads(c.engine));
    progress.line("parallel " + std::to_string(c.parallel) + (plan_column ? ", plan " + c.plan->label : "") + ": " +
                  desc);
    return true;
  };
  // The read bandwidth with the engine's threads (0 when not measured).
  auto probe = [&](Config& c, double* gbs) -> bool {
    *gbs = 0;
    if (bw_mib > 0 && (st = brisk_engine_read_bandwidth(c.engine, static_cast<uint64_t>(bw_mib) << 20, 5, gbs,
                                                        nullptr, nullptr)) != BRISK_OK) {
      rc = report("bench", st);
      return false;
    }
    return true;
  };
  // Before each repetition: the read bandwidth (same threads, same moment)
  // and the peak-RSS reset.
  auto before_rep = [&](Config& c) -> bool {
    double gbs;
    if (!probe(c, &gbs)) return false;
    if (bw_mib > 0) c.bw_before.push_back(gbs);
    reset_peak_rss();  // the bandwidth buffer (already released) is not the model's memory
    return true;
  };
  auto record = [&](Config& c, const Run& run) {
    c.peak_rss = std::max<uint64_t>(c.peak_rss, peak_rss_bytes());
    c.pp.push_back(run.prompt_tps);
    c.tg.push_back(run.gen_tps);
    c.ttft.push_back(run.ttft_ms);
  };
  // One repetition of the given configurations, together.
  auto run_rep = [&](std::vector<Config*> cs, int r) -> bool {
    progress.update("bench", static_cast<uint64_t>(r), static_cast<uint64_t>(reps),
                    cs.size() == 1 ? "parallel " + std::to_string(cs[0]->parallel)
                                   : std::to_string(cs.size()) + " configurations in turns");
    // One bandwidth measurement serves configurations that run together.
    if (!before_rep(*cs[0])) return false;
    std::vector<std::pair<brisk_engine*, int>> engines;
    for (Config* c : cs) engines.emplace_back(c->engine, c->parallel);
    std::vector<Run> runs;
    if (!run_together(engines, prompt, n_gen, window, &runs)) {
      rc = 1;
      return false;
    }
    for (size_t i = 0; i < cs.size(); ++i) record(*cs[i], runs[i]);  // peak RSS before the next probe's buffer
    // And after it: the host's bandwidth drifts within seconds on a shared
    // machine, so the repetition is set against the mean of the two.
    double after;
    if (!probe(*cs[0], &after)) return false;
    for (size_t i = 0; i < cs.size(); ++i) {
      if (bw_mib > 0) {
        const double before = cs[0]->bw_before.back();
        if (i > 0) cs[i]->bw_before.push_back(before);
        cs[i]->bw_after.push_back(after);
      }
    }
    return true;
  };
  // Prints, compares and records one finished configuration.
  auto finish = [&](const Config& c) {
    const auto& pp = c.pp;
    const auto& tg = c.tg;
    const auto& ttft = c.ttft;
    const int parallel = c.parallel, threads = c.threads;
    nlohmann::json j = {
        {"model", model_name},
        {"weight_type", wtype},
        {"threads", threads},
        {"pinning", c.desc.substr(0, c.desc.find(';'))},
        {"parallel", parallel},
        {"prompt_tokens", prompt.size()},
        {"gen_tokens", n_gen},
        {"window", window},
        {"reps", reps},
        {"interleaved", interleave},
        {"cache_type_k", c.cache.k_name},
        {"cache_type_v", c.cache.v_name},
        {"prompt_tokens_per_s", median(pp)},
        {"gen_tokens_per_s", median(tg)},
        {"gen_tokens_per_s_min", *std::min_element(tg.begin(), tg.end())},
        {"gen_tokens_per_s_max", *std::max_element(tg.begin(), tg.end())},
        {"gen_tokens_per_s_each", tg},
        {"ttft_ms", median(ttft)},
        {"peak_rss_bytes", c.peak_rss},
        {"model_bytes", model_bytes},
        {"decode_bytes", step_bytes},
        {"plan", c.plan->label},
        {"kernel_plan", c.plan->text},
        {"brisk_version", brisk_version()},
        {"time", static_cast<long long>(std::time(nullptr))},
    };
    // A decode step streams step_bytes of weights: at the measured read
    // bandwidth they allow at most `ceiling` steps per second, and a
    // step yields `parallel` tokens. bw use = steps per second / ceiling,
    // each repetition against the mean of the bandwidths measured just
    // before and just after it (the host's bandwidth drifts between
    // repetitions), then the median of the steady repetitions: those whose
    // two readings agree within kSteadyBandwidth. Where they do not, the
    // host's bandwidth changed during the repetition (on a shared host it can
    // flip between states within seconds) and the mean of the
    // two is not the ceiling the repetition ran against. With no steady
    // repetition the median is over all of them.
    constexpr double kSteadyBandwidth = 0.15;
    std::vector<double> bw;
    for (size_t r = 0; r < c.bw_before.size() && r < c.bw_after.size(); ++r)
      bw.push_back(0.5 * (c.bw_before[r] + c.bw_after[r]));
    double bw_use = 0;
    size_t steady_reps = 0;
    if (!bw.empty() && step_bytes > 0) {
      const double ceiling = median(bw) * 1e9 / static_cast<double>(step_bytes);
      std::vector<double> uses, steady;
      for (size_t r = 0; r < tg.size() && r < bw.size(); ++r) {
        uses.push_back(tg[r] / parallel / (bw[r] * 1e9 / static_cast<double>(step_bytes)));
        if (std::abs(c.bw_before[r] - c.bw_after[r]) <= kSteadyBandwidth * bw[r]) steady.push_back(uses.back());
      }
      steady_reps = steady.size();
      bw_use = median(steady.empty() ? uses : steady);
      j["bandwidth_use_steady_reps"] = steady_reps;
      j["read_bandwidth_gbs"] = median(bw);
      j["read_bandwidth_gbs_min"] = *std::min_element(bw.begin(), bw.end());
      j["read_bandwidth_gbs_max"] = *std::max_element(bw.begin(), bw.end());
      j["decode_ceiling_steps_per_s"] = ceiling;
      j["bandwidth_use"] = bw_use;
      j["read_bandwidth_gbs_each"] = bw;  // per repetition, as gen_tokens_per_s_each
      j["read_bandwidth_gbs_before_each"] = c.bw_before;
      j["read_bandwidth_gbs_after_each"] = c.bw_after;
      j["bandwidth_use_each"] = uses;
    }
    if (json) {
      std::printf("%s\n", j.dump().c_str());
    } else {
      char range[64];
      std::snprintf(range, sizeof range, "%.1f (%.1f-%.1f)", median(tg), j["gen_tokens_per_s_min"].get<double>(),
                    j["gen_tokens_per_s_max"].get<double>());
      char use[16] = "-";
      if (bw_use > 0) std::snprintf(use, sizeof use, "%.0f%%", bw_use * 100);
      const std::string kv =
          c.cache.k_name == c.cache.v_name ? c.cache.k_name : c.cache.k_name + "/" + c.cache.v_name;
      std::printf("%-24s %-6s %-9s %3d %4d %8zu %14.1f %22s %7s %9.1f %9.0f%s\n", model_name.substr(0, 24).c_str(), wtype,
                  kv.c_str(), threads, parallel, prompt.size(), median(pp), range, use, median(ttft),
                  c.peak_rss / 1048576.0, plan_column ? ("  " + c.plan->label).c_str() : "");
      if (!bw.empty())
        std::fprintf(stderr, "  parallel %d: memory read bandwidth %.1f GB/s (%.1f-%.1f over %zu repetitions, each "
                             "the mean of reads of %d MiB before and after it); "
                             "%.0f MB of weights per step -> at most %.1f decode steps/s; bw use over %zu steady "
                             "repetitions (before and after within %.0f%%)%s\n",
                     parallel, median(bw), *std::min_element(bw.begin(), bw.end()),
                     *std::max_element(bw.begin(), bw.end()), bw.size(), bw_mib, step_bytes / 1e6,
                     j["decode_ceiling_steps_per_s"].get<double>(), steady_reps, kSteadyBandwidth * 100,
                     steady_reps == 0 ? ", none: over all" : "");
    }
    std::fflush(stdout);
    if (args.count("compare")) {
      const nlohmann::json* last = nullptr;
      for (const auto& p : past)
        if (p.value("model", "") == j["model"] && p.value("weight_type", "") == j["weight_type"] &&
            p.value("threads", 0) == j["threads"] && p.value("parallel", 0) == j["parallel"] &&
            p.value("prompt_tokens", 0) == j["prompt_tokens"] && p.value("gen_tokens", 0) == j["gen_tokens"] &&
            p.value("cache_type_k", "") == j["cache_type_k"] && p.value("cache_type_v", "") == j["cache_type_v"] &&
            p.value("plan", j["plan"].get<std::string>()) == j["plan"])
          last = &p;
      if (!last) {
        std::fprintf(stderr, "  compare: no earlier run of this configuration in %s\n", history.c_str());
      } else {
        auto pct = [](double now, double then) { return then > 0 ? (now / then - 1) * 100 : 0.0; };
        std::fprintf(stderr, "  compare: prompt %+.1f%%, generation %+.1f%%, ttft %+.1f%% (vs %lld)\n",
                     pct(median(pp), (*last)["prompt_tokens_per_s"].get<double>()),
                     pct(median(tg), (*last)["gen_tokens_per_s"].get<double>()),
                     pct(median(ttft), (*last)["ttft_ms"].get<double>()), (*last)["time"].get<long long>());
      }
    }
    if (!args.count("no-history")) {
      std::error_code ec;
      std::filesystem::create_directories(std::filesystem::path(history).parent_path(), ec);
      std::ofstream out(history, std::ios::app);
      if (out) out << j.dump() << "\n";
    }
  };

  if (interleave) {
    // Every engine first, then each repetition of all of them together,
    // stepped in turns, so that a drifting machine load affects all alike.
    bool ok = true;
    for (Config& c : configs)
      if (ok) ok = create(c);
    std::vector<Config*> all;
    for (Config& c : configs) all.push_back(&c);
    for (int r = 0; r < reps && ok; ++r) ok = run_rep(all, r);
    progress.finish();
    if (ok)
      for (const Config& c : configs) finish(c);
    for (Config& c : configs) brisk_engine_free(c.engine);
  } else {
    for (Config& c : configs) {
      if (!create(c)) break;
      bool ok = true;
      for (int r = 0; r < reps && ok; ++r) ok = run_rep({&c}, r);
      progress.finish();
      brisk_engine_free(c.engine);
      c.engine = nullptr;
      if (!ok) break;
      finish(c);
    }
  }
  for (Plan& p : plans) brisk_model_close(p.model);
  return rc;
}

}  // namespace brisk::tools
