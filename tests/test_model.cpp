// SPDX-License-Identifier: MIT
// End-to-end through brisk.h: the reference texts and logits of the shared models.
#include <brisk/brisk.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_data.h"

namespace {


struct Loaded {
  brisk_model* model = nullptr;
  brisk_session* session = nullptr;
  explicit Loaded(const std::string& path, uint32_t n_ctx = 512) {
    REQUIRE(brisk_model_open(path.c_str(), nullptr, &model) == BRISK_OK);
    brisk_session_options so;
    brisk_session_options_init(&so);
    so.n_ctx = n_ctx;
    so.n_threads = 2;
    REQUIRE(brisk_session_create(model, &so, &session) == BRISK_OK);
  }
  ~Loaded() {
    brisk_session_free(session);
    brisk_model_close(model);
  }
};

int on_token(void* ud, int32_t, const char* text, size_t len) {
  static_cast<std::string*>(ud)->append(text, len);
  return 0;
}

// Greedy text after BOS (+ prompt), as brisk run prints it (without the prompt).
std::string greedy(const std::string& path, const std::string& prompt, int n) {
  Loaded l(path);
  std::vector<int32_t> ids(4096);
  size_t needed = 0;
  REQUIRE(brisk_tokenize(l.model, prompt.data(), prompt.size(), BRISK_TOKENIZE_ADD_BOS, ids.data(), ids.size(),
                         &needed) == BRISK_OK);
  ids.resize(needed);
  REQUIRE(brisk_session_eval(l.session, ids.data(), ids.size()) == BRISK_OK);
  brisk_sampler_options sp;
  brisk_sampler_options_init(&sp);
  sp.temperature = 0;
  sp.repeat_penalty = 1.0f;
  brisk_sampler* s = nullptr;
  REQUIRE(brisk_sampler_create(&sp, &s) == BRISK_OK);
  brisk_generate_options go;
  brisk_generate_options_init(&go);
  go.max_tokens = n;
  std::string text;
  go.token_fn = on_token;
  go.token_user_data = &text;
  REQUIRE(brisk_generate(l.session, s, &go, nullptr, nullptr) == BRISK_OK);
  brisk_sampler_free(s);
  return text;
}

}  // namespace

TEST_CASE("stories260K: greedy text equals llama2.c run.c", "[model]") {
  BRISK_TEST_FILE(model, "models/stories260K.gguf");
  BRISK_TEST_FILE(ref, "models/reference/stories260K.greedy256.run_c.txt");
  auto rstrip = [](std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
  };
  // run.c ends its output with newlines of its own; the text is what counts.
  CHECK(rstrip(greedy(model, "", 256)) == rstrip(brisk::test::read_bytes(ref)));
}

TEST_CASE("stories260K: logits match the float64 reference to 1e-4", "[model]") {
  BRISK_TEST_FILE(model, "models/stories260K.gguf");
  BRISK_TEST_FILE(ref, "models/reference/stories260K.greedy64.logits.json");
  auto j = nlohmann::json::parse(brisk::test::read_bytes(ref));
  std::vector<int32_t> ids = j["input_ids"].get<std::vector<int32_t>>();
  Loaded l(model);
  const size_t n_vocab = static_cast<size_t>(brisk_model_n_vocab(l.model));
  std::vector<float> logits(ids.size() * n_vocab);
  size_t needed = 0;
  REQUIRE(brisk_session_eval_all(l.session, ids.data(), ids.size(), logits.data(), logits.size(), &needed) ==
          BRISK_OK);
  double worst = 0;
  for (size_t p = 0; p < ids.size(); ++p) {
    const auto& row = j["logits"][p];
    REQUIRE(row.size() == n_vocab);
    for (size_t v = 0; v < n_vocab; ++v)
      worst = std::max(worst, std::fabs(static_cast<double>(logits[p * n_vocab + v]) - row[v].get<double>()));
  }
  INFO("largest difference " << worst);
  CHECK(worst < 1e-4);
}

TEST_CASE("stories260K-f16: same greedy text for 100 tokens", "[model]") {
  BRISK_TEST_FILE(f32, "models/stories260K.gguf");
  BRISK_TEST_FILE(f16, "models/stories260K-f16.gguf");
  // Compare by token count: generate 100 tokens from each.
  CHECK(greedy(f16, "", 100) == greedy(f32, "", 100));
}

TEST_CASE("llama-2-tiny-random: top-20 logits match the reference", "[model]") {
  BRISK_TEST_FILE(model, "models/llama-2-tiny-random.gguf");
  BRISK_TEST_FILE(ref, "models/reference/llama-2-tiny-random.greedy16.top20.json");
  auto j = nlohmann::json::parse(brisk::test::read_bytes(ref));
  std::vector<int32_t> ids = j["input_ids"].get<std::vector<int32_t>>();
  Loaded l(model);
  const size_t n_vocab = static_cast<size_t>(brisk_model_n_vocab(l.model));
  REQUIRE(n_vocab == 32000);
  std::vector<float> logits(ids.size() * n_vocab);
  size_t needed = 0;
  REQUIRE(brisk_session_eval_all(l.session, ids.data(), ids.size(), logits.data(), logits.size(), &needed) ==
          BRISK_OK);
  double worst = 0;
  for (size_t p = 0; p < ids.size(); ++p) {
    for (const auto& e : j["topk_logits"][p]["top"]) {
      const size_t id = e[0].get<size_t>();
      worst = std::max(worst, std::fabs(logits[p * n_vocab + id] - e[1].get<double>()));
    }
  }
  INFO("largest difference " << worst);
  CHECK(worst < 1e-3);
}

TEST_CASE("session: context overflow and bad tokens are clear errors", "[model]") {
  BRISK_TEST_FILE(model, "models/stories260K.gguf");
  Loaded l(model, 16);
  std::vector<int32_t> ids(17, 1);
  CHECK(brisk_session_eval(l.session, ids.data(), ids.size()) == BRISK_ERR_CONTEXT_FULL);
  CHECK(std::string(brisk_last_error()).find("do not fit") != std::string::npos);
  CHECK(brisk_session_position(l.session) == 0);
  int32_t bad = 100000;
  CHECK(brisk_session_eval(l.session, &bad, 1) == BRISK_ERR_INVALID_ARGUMENT);
  float one = 0;
  size_t needed = 0;
  CHECK(brisk_session_logits(l.session, &one, 1, &needed) == BRISK_ERR_INVALID_ARGUMENT);
}

TEST_CASE("sampling: the same seed gives the same text", "[model]") {
  BRISK_TEST_FILE(model, "models/stories260K.gguf");
  auto sample_text = [&](uint64_t seed) {
    Loaded l(model);
    int32_t bos = brisk_model_token_bos(l.model);
    REQUIRE(brisk_session_eval(l.session, &bos, 1) == BRISK_OK);
    brisk_sampler_options sp;
    brisk_sampler_options_init(&sp);
    sp.temperature = 1.0f;
    sp.seed = seed;
    brisk_sampler* s = nullptr;
    REQUIRE(brisk_sampler_create(&sp, &s) == BRISK_OK);
    brisk_generate_options go;
    brisk_generate_options_init(&go);
    go.max_tokens = 60;
    std::string text;
    go.token_fn = on_token;
    go.token_user_data = &text;
    REQUIRE(brisk_generate(l.session, s, &go, nullptr, nullptr) == BRISK_OK);
    brisk_sampler_free(s);
    return text;
  };
  std::string a = sample_text(42), b = sample_text(42), c = sample_text(7);
  CHECK(a == b);
  CHECK(a != c);
}
