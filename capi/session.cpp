// SPDX-License-Identifier: MIT
// brisk_session_*, brisk_sampler_* and brisk_generate.
#include <algorithm>
#include <string>

#include "guard.h"
#include "handles.h"

using brisk::capi::checked;
using brisk::capi::checked_sampler;
using brisk::capi::checked_session;
using brisk::capi::copy_out;
using brisk::capi::guard;
using brisk::capi::guard_value;
using brisk::capi::guard_void;
using brisk::capi::require;
using brisk::capi::SessionBusy;

namespace {

// A session freed inside its abort check stops the call at once; its
// callbacks are not called again.
bool call_abort(void* ctx) {
  const brisk_session* h = static_cast<const brisk_session*>(ctx);
  if (h->free_requested) return true;
  return h->options.abort_fn && h->options.abort_fn(h->options.abort_user_data) != 0;
}

}  // namespace

extern "C" {

static void fill_session_options(brisk_session_options* o) {
  if (!o) return;
  *o = brisk_session_options{};
  o->struct_size = sizeof(*o);
  o->n_batch = 512;
  o->cache_type_k = BRISK_TYPE_AUTO;
  o->cache_type_v = BRISK_TYPE_AUTO;
}

brisk_status brisk_session_create(const brisk_model* m, const brisk_session_options* options, brisk_session** out) {
  return guard([&] {
    require(out, "out_session");
    *out = nullptr;
    checked(m, "model");
    auto h = std::make_unique<brisk_session>();
    h->owner = m;
    h->options = brisk::capi::merge_options(options, [](brisk_session_options* p) { brisk_session_options_init(p); });
    const brisk_session_options& o = h->options;
    if (o.n_ctx > (1u << 24) || o.n_threads > 4096 || o.n_batch > (1u << 20))
      brisk::fail(BRISK_ERR_INVALID_ARGUMENT, "session options out of range");
    brisk::SessionOptions so;
    so.n_ctx = static_cast<int>(o.n_ctx);
    so.n_threads = static_cast<int>(o.n_threads);
    so.n_batch = o.n_batch ? static_cast<int>(o.n_batch) : 512;
    if (o.cache_type_k != BRISK_TYPE_AUTO) so.k_type = static_cast<brisk::TensorType>(o.cache_type_k);
    if (o.cache_type_v != BRISK_TYPE_AUTO) so.v_type = static_cast<brisk::TensorType>(o.cache_type_v);
    so.pin_threads = o.no_pin == 0;
    so.pin_caller = o.pin_caller != 0;
    so.abort = call_abort;
    so.abort_ctx = h.get();
    so.memory_budget = o.memory_budget;
    h->session = std::make_unique<brisk::Session>(*m->model, so);
    h->owner = m;
    brisk::capi::hold_model(m);
    *out = h.release();
  });
}

void brisk_session_free(brisk_session* s) {
  guard_void([&] {
    if (!s) return;
    checked_session(s);
    if (s->busy) {
      // Inside one of its callbacks: stop the call, free when it returns.
      s->free_requested = true;
      s->magic = brisk::capi::kMagicDead;
      return;
    }
    brisk::capi::destroy_session(s);
  });
}

brisk_status brisk_session_reset(brisk_session* s) {
  return guard([&] { checked_session(s)->session->reset(); });
}

brisk_status brisk_session_truncate(brisk_session* s, uint32_t position) {
  return guard([&] { checked_session(s)->session->truncate(static_cast<int>(std::min<uint32_t>(position, 1u << 30))); });
}

uint32_t brisk_session_position(const brisk_session* s) {
  return guard_value(0u, [&] { return static_cast<uint32_t>(checked_session(s)->session->position()); });
}
uint32_t brisk_session_n_ctx(const brisk_session* s) {
  return guard_value(0u, [&] { return static_cast<uint32_t>(checked_session(s)->session->n_ctx()); });
}

brisk_status brisk_session_eval(brisk_session* s, const int32_t* tokens, size_t n) {
  return guard([&] {
    checked_session(s);
    if (n > 0) require(tokens, "tokens");
    SessionBusy busy(s);
    s->session->eval(tokens, n);
  });
}

brisk_status brisk_session_eval_all(brisk_session* s, const int32_t* tokens, size_t n, float* logits, size_t cap,
                                    size_t* needed) {
  return guard([&] {
    checked_session(s);
    if (n > 0) require(tokens, "tokens");
    const size_t want = n * static_cast<size_t>(s->owner->model->config().n_vocab);
    if (needed) *needed = want;
    if (cap < want || (want > 0 && !logits))
      brisk::fail(BRISK_ERR_BUFFER_TOO_SMALL, "logits buffer holds " + std::to_string(cap) + " floats, " +
                                                  std::to_string(want) + " needed");
    SessionBusy busy(s);
    s->session->eval(tokens, n, logits);
  });
}

brisk_status brisk_session_logits(const brisk_session* s, float* logits, size_t cap, size_t* needed) {
  return guard([&] {
    checked_session(s);
    const std::vector<float>& l = s->session->logits();
    if (l.empty()) brisk::fail(BRISK_ERR_INVALID_ARGUMENT, "no logits yet: evaluate some tokens first");
    copy_out(l.data(), l.size(), logits, cap, needed);
  });
}

static void fill_sampler_options(brisk_sampler_options* o) {
  if (!o) return;
  *o = brisk_sampler_options{};
  o->struct_size = sizeof(*o);
  brisk::SamplerParams d;
  o->temperature = d.temperature;
  o->top_k = d.top_k;
  o->top_p = d.top_p;
  o->min_p = d.min_p;
  o->repeat_penalty = d.repeat_penalty;
  o->repeat_last_n = d.repeat_last_n;
  o->seed = d.seed;
}

brisk_status brisk_sampler_create(const brisk_sampler_options* options, brisk_sampler** out) {
  return guard([&] {
    require(out, "out_sampler");
    *out = nullptr;
    brisk_sampler_options o = brisk::capi::merge_options(options, [](brisk_sampler_options* p) { brisk_sampler_options_init(p); });
    if (!(o.repeat_penalty > 0)) brisk::fail(BRISK_ERR_INVALID_ARGUMENT, "repeat_penalty must be positive");
    if (o.top_p != o.top_p || o.min_p != o.min_p || o.temperature != o.temperature ||
        o.presence_penalty != o.presence_penalty || o.frequency_penalty != o.frequency_penalty)
      brisk::fail(BRISK_ERR_INVALID_ARGUMENT, "sampler options must not be NaN");
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
    auto h = std::make_unique<brisk_sampler>();
    h->sampler = std::make_unique<brisk::Sampler>(p);
    *out = h.release();
  });
}

void brisk_sampler_free(brisk_sampler* s) {
  guard_void([&] {
    if (!s) return;
    checked_sampler(s)->sampler.reset();
    brisk::capi::retire(s);
  });
}

brisk_status brisk_sampler_sample(brisk_sampler* sampler, const brisk_session* s, int32_t* out) {
  return guard([&] {
    checked_sampler(sampler);
    checked_session(s);
    require(out, "out_token");
    const std::vector<float>& l = s->session->logits();
    if (l.empty()) brisk::fail(BRISK_ERR_INVALID_ARGUMENT, "no logits yet: evaluate some tokens first");
    *out = sampler->sampler->sample(l.data(), static_cast<int>(l.size()));
  });
}

void brisk_sampler_accept(brisk_sampler* sampler, int32_t token) {
  guard_void([&] { checked_sampler(sampler)->sampler->accept(token); });
}

static void fill_generate_options(brisk_generate_options* o) {
  if (!o) return;
  *o = brisk_generate_options{};
  o->struct_size = sizeof(*o);
  o->max_tokens = 128;
  o->stop_at_eos = 1;
}

brisk_status brisk_generate(brisk_session* s, brisk_sampler* sampler, const brisk_generate_options* options,
                            size_t* n_generated, brisk_stop_reason* stop_reason) {
  if (n_generated) *n_generated = 0;
  return guard([&] {
    checked_session(s);
    checked_sampler(sampler);
    brisk_generate_options o = brisk::capi::merge_options(options, [](brisk_generate_options* p) { brisk_generate_options_init(p); });
    if (o.max_tokens < 0) brisk::fail(BRISK_ERR_INVALID_ARGUMENT, "max_tokens must not be negative");
    brisk::Session::TokenCallback cb;
    if (o.token_fn) {
      // Once the session is freed inside the callback, it is not called again.
      cb = [s, fn = o.token_fn, ud = o.token_user_data](int32_t token, const std::string& text) {
        return !s->free_requested && fn(ud, token, text.c_str(), text.size()) == 0 && !s->free_requested;
      };
    }
    SessionBusy busy(s);
    brisk::StopReason r = s->session->generate(*sampler->sampler, o.max_tokens, o.stop_at_eos != 0, cb, n_generated);
    if (stop_reason) *stop_reason = static_cast<brisk_stop_reason>(r);
  });
}

}  // extern "C"

extern "C" {
void brisk_session_options_init_sized(brisk_session_options* o, size_t size) {
  brisk::capi::init_sized(o, size, fill_session_options);
}
void brisk_sampler_options_init_sized(brisk_sampler_options* o, size_t size) {
  brisk::capi::init_sized(o, size, fill_sampler_options);
}
void brisk_generate_options_init_sized(brisk_generate_options* o, size_t size) {
  brisk::capi::init_sized(o, size, fill_generate_options);
}
}  // extern "C"
