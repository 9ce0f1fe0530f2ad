// SPDX-License-Identifier: MIT
// The engine: sequences decoded together give exactly what they give alone.
#include <brisk/brisk.h>
#include <brisk/brisk_experimental.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "test_data.h"

namespace {

const char* kPrompts[] = {
    "Once upon a time", "Tom and Sue went to the", "The little dog", "Lily had a red ball.",
    "One day, a big bear", "Sam was sad because", "The sun was hot and", "Mom said,",
};

std::vector<int32_t> tokenize(brisk_model* m, const std::string& text) {
  std::vector<int32_t> ids(1024);
  size_t n = 0;
  REQUIRE(brisk_tokenize(m, text.data(), text.size(), BRISK_TOKENIZE_ADD_BOS, ids.data(), ids.size(), &n) ==
          BRISK_OK);
  ids.resize(n);
  return ids;
}

brisk_sampler_options greedy_opts() {
  brisk_sampler_options sp;
  brisk_sampler_options_init(&sp);
  sp.temperature = 0;
  return sp;
}

// The reference: one session per prompt.
std::vector<int32_t> alone(brisk_model* m, const std::vector<int32_t>& prompt, int n) {
  brisk_session_options so;
  brisk_session_options_init(&so);
  so.n_ctx = 256;
  so.n_threads = 2;
  brisk_session* s = nullptr;
  REQUIRE(brisk_session_create(m, &so, &s) == BRISK_OK);
  REQUIRE(brisk_session_eval(s, prompt.data(), prompt.size()) == BRISK_OK);
  brisk_sampler_options sp = greedy_opts();
  brisk_sampler* smp = nullptr;
  REQUIRE(brisk_sampler_create(&sp, &smp) == BRISK_OK);
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    int32_t t = 0;
    REQUIRE(brisk_sampler_sample(smp, s, &t) == BRISK_OK);
    out.push_back(t);
    REQUIRE(brisk_session_eval(s, &t, 1) == BRISK_OK);
  }
  brisk_sampler_free(smp);
  brisk_session_free(s);
  return out;
}

std::vector<int32_t> generated(brisk_sequence* s) {
  std::vector<int32_t> out(4096);
  size_t n = 0;
  REQUIRE(brisk_sequence_generated(s, out.data(), out.size(), &n) == BRISK_OK);
  out.resize(n);
  return out;
}

void start(brisk_sequence* s, int n) {
  brisk_sampler_options sp = greedy_opts();
  brisk_generate_options go;
  brisk_generate_options_init(&go);
  go.max_tokens = n;
  go.stop_at_eos = 0;
  REQUIRE(brisk_sequence_generate(s, &sp, &go) == BRISK_OK);
}

void check_batched_equals_alone(const std::string& path) {
  brisk_model* m = nullptr;
  REQUIRE(brisk_model_open(path.c_str(), nullptr, &m) == BRISK_OK);
  const int n_gen = 40;
  std::vector<std::vector<int32_t>> prompts, want;
  for (const char* p : kPrompts) {
    prompts.push_back(tokenize(m, p));
    want.push_back(alone(m, prompts.back(), n_gen));
  }
  brisk_engine_options eo;
  brisk_engine_options_init(&eo);
  eo.n_ctx = 256;
  eo.n_seq_max = 10;
  eo.n_threads = 2;
  eo.n_batch = 16;  // small, so prompts are read in chunks alongside decoding
  brisk_engine* e = nullptr;
  REQUIRE(brisk_engine_create(m, &eo, &e) == BRISK_OK);

  // Six start together; two join after a few steps.
  std::vector<brisk_sequence*> seqs(8, nullptr);
  for (int i = 0; i < 6; ++i) {
    REQUIRE(brisk_sequence_create(e, &seqs[i]) == BRISK_OK);
    REQUIRE(brisk_sequence_add_tokens(seqs[i], prompts[i].data(), prompts[i].size()) == BRISK_OK);
    start(seqs[i], n_gen);
  }
  uint32_t active = 0;
  for (int k = 0; k < 5; ++k) REQUIRE(brisk_engine_step(e, &active) == BRISK_OK);
  for (int i = 6; i < 8; ++i) {
    REQUIRE(brisk_sequence_create(e, &seqs[i]) == BRISK_OK);
    REQUIRE(brisk_sequence_add_tokens(seqs[i], prompts[i].data(), prompts[i].size()) == BRISK_OK);
    start(seqs[i], n_gen);
  }
  int steps = 0;
  do {
    REQUIRE(brisk_engine_step(e, &active) == BRISK_OK);
    if (++steps >= 1000) {
      for (int i = 0; i < 8; ++i)
        WARN("seq " << i << " state " << brisk_sequence_get_state(seqs[i]) << " pos "
                             << brisk_sequence_position(seqs[i]) << " generated " << generated(seqs[i]).size());
      FAIL("the engine did not finish");
    }
  } while (active > 0);
  for (int i = 0; i < 8; ++i) {
    INFO("sequence " << i << ": " << kPrompts[i]);
    CHECK(brisk_sequence_get_state(seqs[i]) == BRISK_SEQ_FINISHED);
    CHECK(generated(seqs[i]) == want[i]);
  }

  // Shared prefix: evaluate a common prompt once, fork it, continue each fork.
  brisk_sequence* base = nullptr;
  REQUIRE(brisk_sequence_create(e, &base) == BRISK_OK);
  std::vector<int32_t> common = tokenize(m, "Once upon a time, there was a");
  REQUIRE(brisk_sequence_add_tokens(base, common.data(), common.size()) == BRISK_OK);
  while (brisk_sequence_get_state(base) != BRISK_SEQ_IDLE) REQUIRE(brisk_engine_step(e, &active) == BRISK_OK);
  const char* tails[] = {" girl", " dog", " big"};
  std::vector<brisk_sequence*> forks;
  for (const char* tail : tails) {
    brisk_sequence* f = nullptr;
    REQUIRE(brisk_sequence_fork(base, &f) == BRISK_OK);
    std::vector<int32_t> t = tokenize(m, tail);
    t.erase(t.begin());  // no second BOS
    REQUIRE(brisk_sequence_add_tokens(f, t.data(), t.size()) == BRISK_OK);
    start(f, 20);
    forks.push_back(f);
  }
  do REQUIRE(brisk_engine_step(e, &active) == BRISK_OK);
  while (active > 0);
  for (size_t i = 0; i < forks.size(); ++i) {
    std::vector<int32_t> full = common, t = tokenize(m, tails[i]);
    full.insert(full.end(), t.begin() + 1, t.end());
    INFO("fork " << i);
    CHECK(generated(forks[i]) == alone(m, full, 20));
  }
  brisk_engine_free(e);
  brisk_model_close(m);
}

}  // namespace

TEST_CASE("engine: 8 sequences together equal 8 alone (F32)", "[engine]") {
  BRISK_TEST_FILE(path, "models/stories260K.gguf");
  check_batched_equals_alone(path);
}

TEST_CASE("engine: 8 sequences together equal 8 alone (Q8_0)", "[engine]") {
  BRISK_TEST_FILE(path, "models/stories260K-q8_0.gguf");
  check_batched_equals_alone(path);
}

TEST_CASE("engine: the memory planner refuses what does not fit", "[engine]") {
  BRISK_TEST_FILE(path, "models/stories260K.gguf");
  brisk_model* m = nullptr;
  REQUIRE(brisk_model_open(path.c_str(), nullptr, &m) == BRISK_OK);
  brisk_engine_options eo;
  brisk_engine_options_init(&eo);
  eo.n_ctx = 2048;
  eo.n_seq_max = 64;
  eo.memory_budget = 8ull << 20;  // 8 MiB: the weights fit, 64 x 2048 KV does not
  brisk_engine* e = nullptr;
  CHECK(brisk_engine_create(m, &eo, &e) == BRISK_ERR_OUT_OF_MEMORY);
  CHECK(e == nullptr);
  std::string msg = brisk_last_error();
  INFO(msg);
  CHECK(msg.find("not enough memory for 64 sequences x 2048 context") != std::string::npos);
  CHECK(msg.find("at most") != std::string::npos);
  // Exhausting the slots is a clear error too.
  eo.memory_budget = 0;
  eo.n_seq_max = 2;
  eo.n_ctx = 64;
  REQUIRE(brisk_engine_create(m, &eo, &e) == BRISK_OK);
  brisk_sequence *a = nullptr, *b = nullptr, *c = nullptr;
  REQUIRE(brisk_sequence_create(e, &a) == BRISK_OK);
  REQUIRE(brisk_sequence_create(e, &b) == BRISK_OK);
  CHECK(brisk_sequence_create(e, &c) == BRISK_ERR_OUT_OF_MEMORY);
  brisk_sequence_free(a);
  CHECK(brisk_sequence_create(e, &c) == BRISK_OK);
  std::vector<int32_t> too_long(65, 1);
  CHECK(brisk_sequence_add_tokens(c, too_long.data(), too_long.size()) == BRISK_ERR_CONTEXT_FULL);
  // The read bandwidth the engine's threads reach: positive, ordered, and a
  // buffer size that is not a multiple of anything is fine.
  double md = 0, mn = 0, mx = 0;
  REQUIRE(brisk_engine_read_bandwidth(e, (24u << 20) + 12345, 3, &md, &mn, &mx) == BRISK_OK);
  CHECK(mn > 0);
  CHECK(mn <= md);
  CHECK(md <= mx);
  CHECK(brisk_engine_read_bandwidth(e, 1 << 20, 1, nullptr, nullptr, nullptr) == BRISK_ERR_INVALID_ARGUMENT);
  CHECK(brisk_engine_read_bandwidth(nullptr, 1 << 20, 1, &md, nullptr, nullptr) == BRISK_ERR_INVALID_ARGUMENT);
  brisk_engine_free(e);
  brisk_model_close(m);
}

namespace {
struct Reentry {
  brisk_sequence* self = nullptr;
  brisk_engine* engine = nullptr;
  brisk_status add_status = BRISK_OK, step_status = BRISK_OK;
  int calls = 0;
};
int reenter(void* ud, int32_t, const char*, size_t) {
  Reentry* r = static_cast<Reentry*>(ud);
  int32_t t = 1;
  r->add_status = brisk_sequence_add_tokens(r->self, &t, 1);
  r->step_status = brisk_engine_step(r->engine, nullptr);
  if (++r->calls == 3) brisk_sequence_free(r->self);  // deferred until the step returns
  return 0;
}
}  // namespace

TEST_CASE("engine: changing the engine inside a callback is refused, freeing is deferred", "[engine]") {
  BRISK_TEST_FILE(path, "models/stories260K.gguf");
  brisk_model* m = nullptr;
  REQUIRE(brisk_model_open(path.c_str(), nullptr, &m) == BRISK_OK);
  brisk_engine_options eo;
  brisk_engine_options_init(&eo);
  eo.n_ctx = 64;
  eo.n_seq_max = 2;
  brisk_engine* e = nullptr;
  REQUIRE(brisk_engine_create(m, &eo, &e) == BRISK_OK);
  Reentry r;
  r.engine = e;
  REQUIRE(brisk_sequence_create(e, &r.self) == BRISK_OK);
  int32_t bos = brisk_model_token_bos(m);
  REQUIRE(brisk_sequence_add_tokens(r.self, &bos, 1) == BRISK_OK);
  brisk_generate_options go;
  brisk_generate_options_init(&go);
  go.max_tokens = 10;
  go.token_fn = reenter;
  go.token_user_data = &r;
  REQUIRE(brisk_sequence_generate(r.self, nullptr, &go) == BRISK_OK);
  uint32_t active = 1;
  for (int i = 0; i < 20 && active > 0; ++i) REQUIRE(brisk_engine_step(e, &active) == BRISK_OK);
  CHECK(active == 0);
  CHECK(r.calls == 3);
  CHECK(r.add_status == BRISK_ERR_INVALID_ARGUMENT);
  CHECK(r.step_status == BRISK_ERR_INVALID_ARGUMENT);
  brisk_engine_free(e);
  brisk_model_close(m);
}
