// SPDX-License-Identifier: MIT
// One runtime: a session and a one-sequence engine generate the same tokens
// and text (UTF-8 split across tokens, stops by callback, max tokens and a
// full context, with the pending bytes flushed at the end on every path),
// and the brisk.h promises about token callbacks hold on both paths.
#include <brisk/brisk.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "test_data.h"

namespace {

struct Call {
  int32_t token;
  std::string text;
};

struct Run {
  std::vector<Call> calls;
  brisk_stop_reason reason = BRISK_STOP_MAX_TOKENS;
  size_t n_generated = 0;
  std::vector<int32_t> tokens() const {
    std::vector<int32_t> t;
    for (const Call& c : calls)
      if (c.token >= 0) t.push_back(c.token);
    return t;
  }
  std::string text() const {
    std::string s;
    for (const Call& c : calls) s += c.text;
    return s;
  }
};

struct Recorder {
  Run* run;
  int stop_at = -1;  // return non-zero after this many tokens
  int seen = 0;
};

int record(void* ud, int32_t token, const char* text, size_t len) {
  Recorder* r = static_cast<Recorder*>(ud);
  r->run->calls.push_back({token, std::string(text, len)});
  if (token >= 0) ++r->seen;
  return r->stop_at >= 0 && r->seen >= r->stop_at;
}

struct Setup {
  std::vector<int32_t> prompt;
  brisk_sampler_options sampling;
  int max_tokens = 64;
  uint32_t n_ctx = 256;
  int stop_at = -1;
};

brisk_sampler_options hot(uint64_t seed) {
  brisk_sampler_options sp;
  brisk_sampler_options_init(&sp);
  sp.temperature = 1.5f;  // many byte tokens from stories260K's byte-fallback vocabulary
  sp.top_k = 0;
  sp.top_p = 1.0f;
  sp.min_p = 0.0f;
  sp.repeat_penalty = 1.3f;  // the prompt counts on both paths
  sp.repeat_last_n = 16;
  sp.seed = seed;
  return sp;
}

Run via_session(brisk_model* m, const Setup& s) {
  brisk_session_options so;
  brisk_session_options_init(&so);
  so.n_ctx = s.n_ctx;
  so.n_threads = 1;
  brisk_session* ses = nullptr;
  REQUIRE(brisk_session_create(m, &so, &ses) == BRISK_OK);
  REQUIRE(brisk_session_eval(ses, s.prompt.data(), s.prompt.size()) == BRISK_OK);
  brisk_sampler* smp = nullptr;
  REQUIRE(brisk_sampler_create(&s.sampling, &smp) == BRISK_OK);
  Run run;
  Recorder rec{&run, s.stop_at};
  brisk_generate_options go;
  brisk_generate_options_init(&go);
  go.max_tokens = s.max_tokens;
  go.token_fn = record;
  go.token_user_data = &rec;
  REQUIRE(brisk_generate(ses, smp, &go, &run.n_generated, &run.reason) == BRISK_OK);
  brisk_sampler_free(smp);
  brisk_session_free(ses);
  return run;
}

Run via_engine(brisk_model* m, const Setup& s) {
  brisk_engine_options eo;
  brisk_engine_options_init(&eo);
  eo.n_ctx = s.n_ctx;
  eo.n_seq_max = 1;
  eo.n_threads = 1;
  brisk_engine* e = nullptr;
  REQUIRE(brisk_engine_create(m, &eo, &e) == BRISK_OK);
  brisk_sequence* q = nullptr;
  REQUIRE(brisk_sequence_create(e, &q) == BRISK_OK);
  REQUIRE(brisk_sequence_add_tokens(q, s.prompt.data(), s.prompt.size()) == BRISK_OK);
  Run run;
  Recorder rec{&run, s.stop_at};
  brisk_generate_options go;
  brisk_generate_options_init(&go);
  go.max_tokens = s.max_tokens;
  go.token_fn = record;
  go.token_user_data = &rec;
  REQUIRE(brisk_sequence_generate(q, &s.sampling, &go) == BRISK_OK);
  uint32_t active = 1;
  while (active > 0) REQUIRE(brisk_engine_step(e, &active) == BRISK_OK);
  run.reason = brisk_sequence_stop_reason(q);
  size_t n = 0;
  const brisk_status st = brisk_sequence_generated(q, nullptr, 0, &n);
  CHECK(st == (n ? BRISK_ERR_BUFFER_TOO_SMALL : BRISK_OK));
  run.n_generated = n;
  brisk_engine_free(e);
  return run;
}

void require_same(const Run& a, const Run& b) {
  REQUIRE(a.tokens() == b.tokens());
  REQUIRE(a.text() == b.text());
  REQUIRE(a.calls.size() == b.calls.size());
  for (size_t i = 0; i < a.calls.size(); ++i) {
    CHECK(a.calls[i].token == b.calls[i].token);
    CHECK(a.calls[i].text == b.calls[i].text);
  }
  CHECK(a.reason == b.reason);
  CHECK(a.n_generated == b.n_generated);
}

// Index of the first token whose bytes were held back (a UTF-8 character
// still incomplete: the token has bytes, its callback text was empty), or -1.
int first_held(brisk_model* m, const Run& r) {
  int i = 0;
  for (const Call& c : r.calls) {
    if (c.token < 0) continue;
    char piece[64];
    size_t n = 0;
    REQUIRE(brisk_token_to_piece(m, c.token, 0, piece, sizeof piece, &n) == BRISK_OK);
    if (c.text.empty() && n > 1) return i;
    ++i;
  }
  return -1;
}

std::vector<int32_t> tokenize(brisk_model* m, const std::string& text) {
  std::vector<int32_t> ids(512);
  size_t n = 0;
  REQUIRE(brisk_tokenize(m, text.data(), text.size(), BRISK_TOKENIZE_ADD_BOS, ids.data(), ids.size(), &n) == BRISK_OK);
  ids.resize(n);
  return ids;
}

}  // namespace

TEST_CASE("runtime: a session and a one-sequence engine give the same tokens and text", "[runtime]") {
  // Random weights over Llama 2's vocabulary, whose 256 byte tokens come up
  // often enough when sampling hot to split characters across tokens.
  BRISK_TEST_FILE(path, "models/llama-2-tiny-random.gguf");
  brisk_model* m = nullptr;
  REQUIRE(brisk_model_open(path.c_str(), nullptr, &m) == BRISK_OK);
  Setup s;
  s.prompt = tokenize(m, "Once upon a time, caf\xC3\xA9 \xE2\x80\x9Chello\xE2\x80\x9D");
  s.max_tokens = 128;

  // Find a seed whose text splits a character across tokens (the text of
  // one token held back): both paths must agree on it token by token.
  int seed = -1, held = -1;
  Run ref;
  for (int k = 0; k < 400 && held < 0; ++k) {
    s.sampling = hot(static_cast<uint64_t>(k));
    ref = via_engine(m, s);
    held = first_held(m, ref);
    if (held >= 0) seed = k;
  }
  REQUIRE(seed >= 0);
  require_same(via_session(m, s), ref);

  SECTION("stop by callback right after a held-back byte: the pending bytes come with token -1") {
    s.stop_at = held + 1;
    const Run a = via_session(m, s), b = via_engine(m, s);
    require_same(a, b);
    CHECK(a.reason == BRISK_STOP_CALLBACK);
    REQUIRE(!a.calls.empty());
    CHECK(a.calls.back().token == -1);
    CHECK(!a.calls.back().text.empty());
  }
  SECTION("max tokens right after a held-back byte") {
    s.max_tokens = held + 1;
    const Run a = via_session(m, s), b = via_engine(m, s);
    require_same(a, b);
    CHECK(a.reason == BRISK_STOP_MAX_TOKENS);
    CHECK(a.calls.back().token == -1);
    CHECK(!a.calls.back().text.empty());
  }
  SECTION("a full context right after a held-back byte") {
    s.n_ctx = static_cast<uint32_t>(s.prompt.size()) + static_cast<uint32_t>(held);
    const Run a = via_session(m, s), b = via_engine(m, s);
    require_same(a, b);
    CHECK(a.reason == BRISK_STOP_CONTEXT_FULL);
    CHECK(a.calls.back().token == -1);
    CHECK(!a.calls.back().text.empty());
  }
  brisk_model_close(m);
}

TEST_CASE("runtime: a trained model's stories agree through both paths, greedy and sampled", "[runtime]") {
  BRISK_TEST_FILE(path, "models/stories260K.gguf");
  brisk_model* m = nullptr;
  REQUIRE(brisk_model_open(path.c_str(), nullptr, &m) == BRISK_OK);
  Setup s;
  s.prompt = tokenize(m, "Once upon a time");
  s.max_tokens = 400;
  s.n_ctx = 512;
  s.sampling = hot(0);
  s.sampling.temperature = 0;
  require_same(via_session(m, s), via_engine(m, s));
  // Sampled stories (top-k, penalty on the prompt): the same on both paths.
  for (uint64_t seed = 0; seed < 3; ++seed) {
    s.sampling = hot(seed);
    s.sampling.temperature = 0.9f;
    s.sampling.top_k = 40;
    require_same(via_session(m, s), via_engine(m, s));
  }
  brisk_model_close(m);
}

namespace {

struct Nested {
  brisk_session* session = nullptr;
  brisk_sampler* sampler = nullptr;
  brisk_engine* engine = nullptr;
  brisk_sequence* sequence = nullptr;
  std::vector<brisk_status> got;
  std::string last_error;
};

int mutate_session(void* ud, int32_t token, const char*, size_t) {
  Nested* n = static_cast<Nested*>(ud);
  if (token < 0 || !n->got.empty()) return 0;
  n->got.push_back(brisk_session_eval(n->session, &token, 1));
  n->last_error = brisk_last_error();
  n->got.push_back(brisk_session_reset(n->session));
  n->got.push_back(brisk_session_truncate(n->session, 1));
  brisk_generate_options go;
  brisk_generate_options_init(&go);
  n->got.push_back(brisk_generate(n->session, n->sampler, &go, nullptr, nullptr));
  // Reading is allowed.
  n->got.push_back(brisk_session_position(n->session) > 0 ? BRISK_OK : BRISK_ERR_INTERNAL);
  return 0;
}

int mutate_engine(void* ud, int32_t token, const char*, size_t) {
  Nested* n = static_cast<Nested*>(ud);
  if (token < 0 || !n->got.empty()) return 0;
  n->got.push_back(brisk_sequence_add_tokens(n->sequence, &token, 1));
  n->last_error = brisk_last_error();
  brisk_sequence* other = nullptr;
  n->got.push_back(brisk_sequence_create(n->engine, &other));
  n->got.push_back(brisk_engine_step(n->engine, nullptr));
  n->got.push_back(brisk_sequence_generate(n->sequence, nullptr, nullptr));
  n->got.push_back(brisk_sequence_get_state(n->sequence) == BRISK_SEQ_GENERATING ? BRISK_OK : BRISK_ERR_INTERNAL);
  return 0;
}

}  // namespace

TEST_CASE("runtime: changing a session or engine inside its token callback is refused on both paths", "[runtime]") {
  BRISK_TEST_FILE(path, "models/stories260K.gguf");
  brisk_model* m = nullptr;
  REQUIRE(brisk_model_open(path.c_str(), nullptr, &m) == BRISK_OK);
  const std::vector<int32_t> prompt = tokenize(m, "Once upon a time");
  const std::vector<brisk_status> want = {BRISK_ERR_INVALID_ARGUMENT, BRISK_ERR_INVALID_ARGUMENT,
                                          BRISK_ERR_INVALID_ARGUMENT, BRISK_ERR_INVALID_ARGUMENT, BRISK_OK};
  {
    Nested n;
    brisk_session_options so;
    brisk_session_options_init(&so);
    so.n_ctx = 128;
    so.n_threads = 1;
    REQUIRE(brisk_session_create(m, &so, &n.session) == BRISK_OK);
    REQUIRE(brisk_session_eval(n.session, prompt.data(), prompt.size()) == BRISK_OK);
    REQUIRE(brisk_sampler_create(nullptr, &n.sampler) == BRISK_OK);
    brisk_generate_options go;
    brisk_generate_options_init(&go);
    go.max_tokens = 4;
    go.token_fn = mutate_session;
    go.token_user_data = &n;
    size_t n_gen = 0;
    REQUIRE(brisk_generate(n.session, n.sampler, &go, &n_gen, nullptr) == BRISK_OK);
    CHECK(n_gen == 4);
    CHECK(n.got == want);
    CHECK(n.last_error.find("callback") != std::string::npos);
    // The session is intact: every reported token is in its context.
    CHECK(brisk_session_position(n.session) == prompt.size() + 4);
    brisk_sampler_free(n.sampler);
    brisk_session_free(n.session);
  }
  {
    Nested n;
    brisk_engine_options eo;
    brisk_engine_options_init(&eo);
    eo.n_ctx = 128;
    eo.n_seq_max = 2;
    eo.n_threads = 1;
    REQUIRE(brisk_engine_create(m, &eo, &n.engine) == BRISK_OK);
    REQUIRE(brisk_sequence_create(n.engine, &n.sequence) == BRISK_OK);
    REQUIRE(brisk_sequence_add_tokens(n.sequence, prompt.data(), prompt.size()) == BRISK_OK);
    brisk_generate_options go;
    brisk_generate_options_init(&go);
    go.max_tokens = 4;
    go.token_fn = mutate_engine;
    go.token_user_data = &n;
    REQUIRE(brisk_sequence_generate(n.sequence, nullptr, &go) == BRISK_OK);
    uint32_t active = 1;
    while (active) REQUIRE(brisk_engine_step(n.engine, &active) == BRISK_OK);
    CHECK(n.got == want);
    CHECK(n.last_error.find("callback") != std::string::npos);
    size_t n_gen = 0;
    CHECK(brisk_sequence_generated(n.sequence, nullptr, 0, &n_gen) == BRISK_ERR_BUFFER_TOO_SMALL);
    CHECK(n_gen == 4);
    brisk_engine_free(n.engine);
  }
  brisk_model_close(m);
}

TEST_CASE("runtime: the repetition penalty sees the prompt through a session and an engine alike", "[runtime]") {
  BRISK_TEST_FILE(path, "models/stories260K.gguf");
  brisk_model* m = nullptr;
  REQUIRE(brisk_model_open(path.c_str(), nullptr, &m) == BRISK_OK);
  Setup s;
  s.prompt = tokenize(m, "Tom and Tom and Tom and Tom and Tom and");
  s.sampling = hot(3);
  s.sampling.temperature = 0;  // greedy: only the penalty can change the choice
  s.sampling.repeat_penalty = 5.0f;
  s.sampling.repeat_last_n = 64;
  s.max_tokens = 8;
  const Run a = via_session(m, s), b = via_engine(m, s);
  require_same(a, b);
  // With the penalty blind to the prompt the first token is the greedy one.
  Setup plain = s;
  plain.sampling.repeat_penalty = 1.0f;
  plain.max_tokens = 1;
  const Run g = via_session(m, plain);
  REQUIRE(!g.tokens().empty());
  const std::vector<int32_t> ta = a.tokens();
  REQUIRE(!ta.empty());
  bool in_prompt = false;
  for (int32_t t : s.prompt) in_prompt = in_prompt || t == g.tokens()[0];
  if (in_prompt) CHECK(ta[0] != g.tokens()[0]);
  brisk_model_close(m);
}
