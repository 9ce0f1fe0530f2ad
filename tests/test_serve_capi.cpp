// SPDX-License-Identifier: MIT
// What `brisk serve` needs from the C API: truncating a fork (the prefix
// cache), the largest engine the memory plan allows (--parallel auto) and
// OpenAI-style penalties in the sampler.
#include <brisk/brisk.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <string>
#include <vector>

#include "test_data.h"

namespace {

std::vector<int32_t> tokens_of(brisk_model* m, const std::string& text) {
  std::vector<int32_t> ids(512);
  size_t n = 0;
  REQUIRE(brisk_tokenize(m, text.data(), text.size(), BRISK_TOKENIZE_ADD_BOS, ids.data(), ids.size(), &n) == BRISK_OK);
  ids.resize(n);
  return ids;
}

// Greedy tokens from a sequence whose prompt is queued or evaluated.
std::vector<int32_t> generate(brisk_engine* e, brisk_sequence* s, int n, const brisk_sampler_options* sp = nullptr) {
  brisk_sampler_options greedy;
  brisk_sampler_options_init(&greedy);
  greedy.temperature = 0;
  brisk_generate_options go;
  brisk_generate_options_init(&go);
  go.max_tokens = n;
  go.stop_at_eos = 0;
  REQUIRE(brisk_sequence_generate(s, sp ? sp : &greedy, &go) == BRISK_OK);
  while (brisk_sequence_get_state(s) != BRISK_SEQ_FINISHED) REQUIRE(brisk_engine_step(e, nullptr) == BRISK_OK);
  std::vector<int32_t> out(static_cast<size_t>(n));
  size_t got = 0;
  REQUIRE(brisk_sequence_generated(s, out.data(), out.size(), &got) == BRISK_OK);
  out.resize(got);
  return out;
}

}  // namespace

TEST_CASE("serve support: a fork cut back to a shared prefix continues like a fresh sequence", "[engine][serve]") {
  BRISK_TEST_FILE(path, "models/stories260K.gguf");
  brisk_model* m = nullptr;
  REQUIRE(brisk_model_open(path.c_str(), nullptr, &m) == BRISK_OK);
  brisk_engine_options eo;
  brisk_engine_options_init(&eo);
  eo.n_ctx = 256;
  eo.n_seq_max = 3;
  eo.n_threads = 2;
  brisk_engine* e = nullptr;
  REQUIRE(brisk_engine_create(m, &eo, &e) == BRISK_OK);

  const std::vector<int32_t> cached = tokens_of(m, "Once upon a time, there was a big red dog");
  const std::vector<int32_t> wanted = tokens_of(m, "Once upon a time, there was a little cat");
  size_t common = 0;
  while (common < cached.size() && common < wanted.size() && cached[common] == wanted[common]) ++common;
  REQUIRE(common > 2);
  REQUIRE(common < cached.size());

  brisk_sequence* fresh = nullptr;
  REQUIRE(brisk_sequence_create(e, &fresh) == BRISK_OK);
  REQUIRE(brisk_sequence_add_tokens(fresh, wanted.data(), wanted.size()) == BRISK_OK);
  const std::vector<int32_t> expected = generate(e, fresh, 24);
  brisk_sequence_free(fresh);

  brisk_sequence* entry = nullptr;
  REQUIRE(brisk_sequence_create(e, &entry) == BRISK_OK);
  REQUIRE(brisk_sequence_add_tokens(entry, cached.data(), cached.size()) == BRISK_OK);
  while (brisk_sequence_get_state(entry) != BRISK_SEQ_IDLE) REQUIRE(brisk_engine_step(e, nullptr) == BRISK_OK);
  brisk_sequence* fork = nullptr;
  REQUIRE(brisk_sequence_fork(entry, &fork) == BRISK_OK);
  CHECK(brisk_sequence_truncate(fork, static_cast<uint32_t>(cached.size() + 1)) == BRISK_ERR_INVALID_ARGUMENT);
  REQUIRE(brisk_sequence_truncate(fork, static_cast<uint32_t>(common)) == BRISK_OK);
  CHECK(brisk_sequence_position(fork) == common);
  // No logits after a cut: generating needs at least one more token.
  brisk_generate_options go;
  brisk_generate_options_init(&go);
  CHECK(brisk_sequence_generate(fork, nullptr, &go) == BRISK_ERR_INVALID_ARGUMENT);
  REQUIRE(brisk_sequence_add_tokens(fork, wanted.data() + common, wanted.size() - common) == BRISK_OK);
  // Only idle sequences may be cut.
  CHECK(brisk_sequence_truncate(fork, 1) == BRISK_ERR_INVALID_ARGUMENT);
  CHECK(generate(e, fork, 24) == expected);
  // The cached entry is untouched: its own continuation is still its own.
  CHECK(brisk_sequence_position(entry) == cached.size());
  CHECK(brisk_sequence_truncate(nullptr, 0) == BRISK_ERR_INVALID_ARGUMENT);
  brisk_engine_free(e);
  brisk_model_close(m);
}

TEST_CASE("serve support: the most sequences the memory plan allows", "[engine][serve]") {
  BRISK_TEST_FILE(path, "models/stories260K.gguf");
  brisk_model* m = nullptr;
  REQUIRE(brisk_model_open(path.c_str(), nullptr, &m) == BRISK_OK);
  brisk_engine_options eo;
  brisk_engine_options_init(&eo);
  eo.n_ctx = 2048;
  eo.n_seq_max = 64;
  eo.n_threads = 2;
  eo.memory_budget = 24ull << 20;
  uint32_t fit = 0;
  REQUIRE(brisk_engine_max_sequences(m, &eo, &fit) == BRISK_OK);
  INFO("fit " << fit);
  REQUIRE(fit >= 1);
  REQUIRE(fit < 64);
  brisk_engine* e = nullptr;
  eo.n_seq_max = fit;
  CHECK(brisk_engine_create(m, &eo, &e) == BRISK_OK);
  brisk_engine_free(e);
  e = nullptr;
  eo.n_seq_max = fit + 1;
  CHECK(brisk_engine_create(m, &eo, &e) == BRISK_ERR_OUT_OF_MEMORY);
  // The upper bound given is respected; a budget below the weights fits none.
  eo.memory_budget = 0;
  eo.n_seq_max = 3;
  REQUIRE(brisk_engine_max_sequences(m, &eo, &fit) == BRISK_OK);
  CHECK(fit == 3);
  eo.memory_budget = 1000;
  REQUIRE(brisk_engine_max_sequences(m, &eo, &fit) == BRISK_OK);
  CHECK(fit == 0);
  CHECK(brisk_engine_max_sequences(nullptr, &eo, &fit) == BRISK_ERR_INVALID_ARGUMENT);
  CHECK(brisk_engine_max_sequences(m, &eo, nullptr) == BRISK_ERR_INVALID_ARGUMENT);
  brisk_model_close(m);
}

TEST_CASE("serve support: presence and frequency penalties steer away from repeats", "[sampler][serve]") {
  BRISK_TEST_FILE(path, "models/stories260K.gguf");
  brisk_model* m = nullptr;
  REQUIRE(brisk_model_open(path.c_str(), nullptr, &m) == BRISK_OK);
  brisk_engine_options eo;
  brisk_engine_options_init(&eo);
  eo.n_ctx = 256;
  eo.n_seq_max = 1;
  eo.n_threads = 2;
  brisk_engine* e = nullptr;
  REQUIRE(brisk_engine_create(m, &eo, &e) == BRISK_OK);
  const std::vector<int32_t> prompt = tokens_of(m, "Once upon a time");
  auto run = [&](float presence, float frequency) {
    brisk_sampler_options sp;
    brisk_sampler_options_init(&sp);
    CHECK(sp.presence_penalty == 0.0f);
    CHECK(sp.frequency_penalty == 0.0f);
    sp.temperature = 0;
    sp.presence_penalty = presence;
    sp.frequency_penalty = frequency;
    sp.repeat_last_n = 256;
    brisk_sequence* s = nullptr;
    REQUIRE(brisk_sequence_create(e, &s) == BRISK_OK);
    REQUIRE(brisk_sequence_add_tokens(s, prompt.data(), prompt.size()) == BRISK_OK);
    std::vector<int32_t> out = generate(e, s, 60, &sp);
    brisk_sequence_free(s);
    return out;
  };
  auto distinct = [](const std::vector<int32_t>& v) {
    std::vector<int32_t> s = v;
    std::sort(s.begin(), s.end());
    return static_cast<size_t>(std::unique(s.begin(), s.end()) - s.begin());
  };
  const std::vector<int32_t> plain = run(0, 0);
  const std::vector<int32_t> presence = run(5.0f, 0);
  const std::vector<int32_t> frequency = run(0, 2.0f);
  CHECK(presence != plain);
  CHECK(frequency != plain);
  // A heavy presence penalty makes every repeat cost more than any gap in
  // this model's greedy logits: more distinct tokens than plain greedy.
  CHECK(distinct(presence) > distinct(plain));
  CHECK(run(0, 0) == plain);
  brisk_engine_free(e);
  brisk_model_close(m);
}
