// SPDX-License-Identifier: MIT
// brisk_engine_* and brisk_sequence_*: many sequences per step.
#include <algorithm>
#include <sstream>
#include <string>

#include "guard.h"
#include "handles.h"
#include "threads/read_bandwidth.h"
#include "threads/thread_pool.h"

using brisk::capi::checked;
using brisk::capi::checked_engine;
using brisk::capi::checked_sequence;
using brisk::capi::copy_out;
using brisk::capi::copy_text_out;
using brisk::capi::EngineBusy;
using brisk::capi::guard;
using brisk::capi::guard_value;
using brisk::capi::guard_void;
using brisk::capi::require;

namespace {

// An engine freed inside its abort check stops the step at once; its
// callbacks are not called again.
bool call_abort(void* ctx) {
  const brisk_engine* h = static_cast<const brisk_engine*>(ctx);
  if (h->free_requested) return true;
  return h->options.abort_fn && h->options.abort_fn(h->options.abort_user_data) != 0;
}

std::vector<int> parse_cpu_list(const char* s) {
  std::vector<int> cpus;
  if (!s) return cpus;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    size_t dash = item.find('-');
    try {
      if (dash == std::string::npos) {
        cpus.push_back(std::stoi(item));
      } else {
        int a = std::stoi(item.substr(0, dash)), b = std::stoi(item.substr(dash + 1));
        if (b < a || b - a > 4096) throw std::invalid_argument("range");
        for (int c = a; c <= b; ++c) cpus.push_back(c);
      }
    } catch (const std::exception&) {
      brisk::fail(BRISK_ERR_INVALID_ARGUMENT, std::string("bad cpu list '") + s + "' (expected e.g. 0,2,4-7)");
    }
  }
  for (int c : cpus)
    if (c < 0 || c > 65535) brisk::fail(BRISK_ERR_INVALID_ARGUMENT, std::string("bad cpu list '") + s + "'");
  return cpus;
}

brisk::SamplerParams sampler_params(const brisk_sampler_options* given) {
  brisk_sampler_options o = brisk::capi::merge_options(given, [](brisk_sampler_options* p) { brisk_sampler_options_init(p); });
  brisk::SamplerParams p;
  p.temperature = o.temperature;
  p.top_k = o.top_k;
  p.top_p = o.top_p;
  p.min_p = o.min_p;
  p.repeat_penalty = o.repeat_penalty;
  p.repeat_last_n = o.repeat_last_n;
  p.seed = o.seed;
  p.presence_penalty = o.presence_penalty;
  p.frequency_penalty = o.frequency_penalty;
  return p;
}

}  // namespace

namespace brisk::capi {
Sequence::TokenCallback token_callback(brisk_engine* e, const brisk_generate_options& g) {
  if (!g.token_fn) return nullptr;
  // Once the engine is freed inside a callback, none is called again.
  return [e, fn = g.token_fn, ud = g.token_user_data](int32_t token, const std::string& text) {
    return !e->free_requested && fn(ud, token, text.c_str(), text.size()) == 0 && !e->free_requested;
  };
}
}  // namespace brisk::capi

extern "C" {

static void fill_engine_options(brisk_engine_options* o) {
  if (!o) return;
  *o = brisk_engine_options{};
  o->struct_size = sizeof(*o);
  o->n_seq_max = 8;
  o->n_batch = 512;
  o->cache_type_k = BRISK_TYPE_AUTO;
  o->cache_type_v = BRISK_TYPE_AUTO;
}

brisk_status brisk_engine_create(const brisk_model* m, const brisk_engine_options* options, brisk_engine** out) {
  return guard([&] {
    require(out, "out_engine");
    *out = nullptr;
    checked(m, "model");
    auto h = std::make_unique<brisk_engine>();
    h->options = brisk::capi::merge_options(options, [](brisk_engine_options* p) { brisk_engine_options_init(p); });
    const brisk_engine_options& o = h->options;
    if (o.n_ctx > (1u << 24) || o.n_threads > 4096 || o.n_batch > (1u << 20) || o.n_seq_max > 65536 ||
        o.n_seq_max == 0 || o.n_batch == 0)
      brisk::fail(BRISK_ERR_INVALID_ARGUMENT, "engine options out of range");
    brisk::EngineOptions eo;
    eo.n_ctx = static_cast<int>(o.n_ctx);
    eo.n_seq_max = static_cast<int>(o.n_seq_max);
    eo.n_threads = static_cast<int>(o.n_threads);
    eo.n_batch = static_cast<int>(o.n_batch);
    if (o.cache_type_k != BRISK_TYPE_AUTO) eo.k_type = static_cast<brisk::TensorType>(o.cache_type_k);
    if (o.cache_type_v != BRISK_TYPE_AUTO) eo.v_type = static_cast<brisk::TensorType>(o.cache_type_v);
    eo.pin_threads = o.no_pin == 0;
    eo.pin_caller = o.pin_caller != 0;
    eo.cpu_list = parse_cpu_list(o.cpu_list);
    h->options.cpu_list = nullptr;  // not kept: the caller's string may go away
    eo.abort = call_abort;
    eo.abort_ctx = h.get();
    eo.memory_budget = o.memory_budget;
    h->engine = std::make_unique<brisk::Engine>(*m->model, eo);
    h->owner = m;
    brisk::capi::hold_model(m);
    *out = h.release();
  });
}

void brisk_engine_free(brisk_engine* e) {
  guard_void([&] {
    if (!e) return;
    checked_engine(e);
    if (e->busy) {
      // Inside one of its callbacks: stop the step, free when it returns.
      // Its sequences are dead from now on.
      e->free_requested = true;
      e->magic = brisk::capi::kMagicDead;
      for (brisk_sequence* s : e->sequences) s->magic = brisk::capi::kMagicDead;
      return;
    }
    brisk::capi::destroy_engine(e);
  });
}

brisk_status brisk_engine_describe(const brisk_engine* e, char* buf, size_t cap, size_t* needed) {
  return guard([&] {
    checked_engine(e);
    const brisk::Engine& en = *e->engine;
    const brisk::KVCache& kv = en.cache();
    char line[512];
    std::snprintf(line, sizeof line, "%s; %d slots x %d tokens; KV %s/%s (%.1f MiB); planned %.1f of %.1f MiB",
                  en.pool().describe().c_str(), en.n_seq_max(), en.n_ctx(), brisk::type_name(kv.k_type()),
                  brisk::type_name(kv.v_type()), kv.total_bytes() / 1048576.0, en.memory_plan().total() / 1048576.0,
                  en.memory_plan().available / 1048576.0);
    copy_text_out(line, buf, cap, needed);
  });
}

uint32_t brisk_engine_n_threads(const brisk_engine* e) {
  return guard_value(0u, [&] { return static_cast<uint32_t>(checked_engine(e)->engine->pool().size()); });
}

uint32_t brisk_physical_cores(void) {
  try {
    return static_cast<uint32_t>(brisk::physical_core_count());
  } catch (...) {  // nothing crosses the boundary; one thread always works
    return 1;
  }
}

brisk_status brisk_engine_step(brisk_engine* e, uint32_t* n_active) {
  if (n_active) *n_active = 0;
  return guard([&] {
    checked_engine(e);
    EngineBusy busy(e);
    int n = e->engine->step();
    if (n_active) *n_active = static_cast<uint32_t>(n);
  });
}

brisk_status brisk_engine_read_bandwidth(brisk_engine* e, uint64_t bytes, uint32_t passes, double* out_median,
                                         double* out_min, double* out_max) {
  return guard([&] {
    require(out_median, "out_median_gb_per_s");
    *out_median = 0;
    if (out_min) *out_min = 0;
    if (out_max) *out_max = 0;
    checked_engine(e);
    if (e->engine->in_step())
      brisk::fail(BRISK_ERR_INVALID_ARGUMENT, "measuring bandwidth is not allowed inside a callback of the same engine");
    const brisk::ReadBandwidth r = brisk::measure_read_bandwidth(
        e->engine->pool(), bytes ? static_cast<size_t>(bytes) : size_t{512} << 20, passes ? static_cast<int>(passes) : 8);
    *out_median = r.median_gbs;
    if (out_min) *out_min = r.min_gbs;
    if (out_max) *out_max = r.max_gbs;
  });
}

brisk_status brisk_sequence_create(brisk_engine* e, brisk_sequence** out) {
  return guard([&] {
    require(out, "out_sequence");
    *out = nullptr;
    checked_engine(e);
    auto h = std::make_unique<brisk_sequence>();
    h->owner = e;
    h->owner_generation = e->generation;
    brisk_generate_options_init(&h->gen);
    h->seq = e->engine->create_sequence();
    e->sequences.push_back(h.get());
    *out = h.release();
  });
}

brisk_status brisk_sequence_fork(const brisk_sequence* src, brisk_sequence** out) {
  return guard([&] {
    require(out, "out_sequence");
    *out = nullptr;
    checked_sequence(src);
    auto h = std::make_unique<brisk_sequence>();
    h->owner = src->owner;
    h->owner_generation = src->owner_generation;
    brisk_generate_options_init(&h->gen);
    h->seq = src->owner->engine->fork(*src->seq);
    src->owner->sequences.push_back(h.get());
    *out = h.release();
  });
}

void brisk_sequence_free(brisk_sequence* s) {
  guard_void([&] {
    if (!s) return;
    checked_sequence(s);
    auto& list = s->owner->sequences;
    list.erase(std::remove(list.begin(), list.end(), s), list.end());
    s->owner->engine->release(s->seq);  // deferred to the step's end inside a callback
    s->seq = nullptr;
    brisk::capi::retire(s);
  });
}

brisk_status brisk_sequence_add_tokens(brisk_sequence* s, const int32_t* tokens, size_t n) {
  return guard([&] {
    checked_sequence(s);
    if (n > 0) require(tokens, "tokens");
    s->seq->add_tokens(tokens, n);
  });
}

brisk_status brisk_sequence_add_text(brisk_sequence* s, const char* text, size_t len, uint32_t flags) {
  return guard([&] {
    checked_sequence(s);
    if (len > 0) require(text, "text");
    const brisk::Tokenizer& tok = s->owner->engine->model().tokenizer();
    std::vector<int32_t> ids = tok.encode(std::string_view(text ? text : "", len), flags & BRISK_TOKENIZE_ADD_BOS,
                                          flags & BRISK_TOKENIZE_PARSE_SPECIAL);
    s->seq->add_tokens(ids.data(), ids.size());
  });
}

brisk_status brisk_sequence_generate(brisk_sequence* s, const brisk_sampler_options* sampling,
                                     const brisk_generate_options* options) {
  return guard([&] {
    checked_sequence(s);
    brisk::SamplerParams p = sampler_params(sampling);
    // Validate everything before touching the sequence: a failed call leaves
    // a running generation and its callback as they were.
    const brisk_generate_options g =
        brisk::capi::merge_options(options, [](brisk_generate_options* p) { brisk_generate_options_init(p); });
    if (g.max_tokens < 0) brisk::fail(BRISK_ERR_INVALID_ARGUMENT, "max_tokens must not be negative");
    if (!(p.repeat_penalty > 0) || p.temperature != p.temperature || p.top_p != p.top_p || p.min_p != p.min_p ||
        p.presence_penalty != p.presence_penalty || p.frequency_penalty != p.frequency_penalty)
      brisk::fail(BRISK_ERR_INVALID_ARGUMENT, "invalid sampler options (NaN, or repeat_penalty <= 0)");
    brisk_engine* e = s->owner;
    brisk::Sequence::TokenCallback cb = brisk::capi::token_callback(e, g);
    s->gen = g;
    // An idle sequence samples its first token (and runs the callback) here.
    EngineBusy busy(e);
    s->seq->generate(p, g.max_tokens, g.stop_at_eos != 0, std::move(cb));
  });
}

brisk_sequence_state brisk_sequence_get_state(const brisk_sequence* s) {
  return guard_value(BRISK_SEQ_FINISHED,
                     [&] { return static_cast<brisk_sequence_state>(checked_sequence(s)->seq->state()); });
}

brisk_stop_reason brisk_sequence_stop_reason(const brisk_sequence* s) {
  return guard_value(BRISK_STOP_MAX_TOKENS,
                     [&] { return static_cast<brisk_stop_reason>(checked_sequence(s)->seq->stop_reason()); });
}

uint32_t brisk_sequence_position(const brisk_sequence* s) {
  return guard_value(0u, [&] { return static_cast<uint32_t>(checked_sequence(s)->seq->position()); });
}

brisk_status brisk_sequence_generated(const brisk_sequence* s, int32_t* tokens, size_t cap, size_t* needed) {
  return guard([&] {
    checked_sequence(s);
    const std::vector<int32_t>& g = s->seq->generated();
    copy_out(g.data(), g.size(), tokens, cap, needed);
  });
}

}  // extern "C"

extern "C" {
void brisk_engine_options_init_sized(brisk_engine_options* o, size_t size) {
  brisk::capi::init_sized(o, size, fill_engine_options);
}
}  // extern "C"
