// SPDX-License-Identifier: MIT
// Saved state: a context written to disk and read back continues exactly as
// if it had never stopped (engine sequences also mid-generation, with a
// seeded sampler); other models, other cache types and damaged files are
// refused with the reason. Also the loading options (no_mmap, mlock).
#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "brisk/brisk.h"
#include "bundle/hash.h"
#include "test_data.h"

namespace {

struct Model {
  brisk_model* m = nullptr;
  explicit Model(const std::string& path, int no_mmap = 0) {
    brisk_model_options o;
    brisk_model_options_init(&o);
    o.no_mmap = no_mmap;
    REQUIRE(brisk_model_open(path.c_str(), &o, &m) == BRISK_OK);
  }
  ~Model() { brisk_model_close(m); }
};

struct Session {
  brisk_session* s = nullptr;
  Session(brisk_model* m, int32_t cache_type = BRISK_TYPE_AUTO) {
    brisk_session_options o;
    brisk_session_options_init(&o);
    o.n_ctx = 256;
    o.n_threads = 1;
    o.cache_type_k = o.cache_type_v = cache_type;
    REQUIRE(brisk_session_create(m, &o, &s) == BRISK_OK);
  }
  ~Session() { brisk_session_free(s); }
};

struct Sampler {
  brisk_sampler* s = nullptr;
  explicit Sampler(float temperature) {
    brisk_sampler_options o;
    brisk_sampler_options_init(&o);
    o.temperature = temperature;
    o.seed = 42;
    o.repeat_penalty = 1.1f;
    REQUIRE(brisk_sampler_create(&o, &s) == BRISK_OK);
  }
  ~Sampler() { brisk_sampler_free(s); }
};

int collect(void* ud, int32_t token, const char*, size_t) {
  if (token >= 0) static_cast<std::vector<int32_t>*>(ud)->push_back(token);
  return 0;
}

std::vector<int32_t> generate(brisk_session* s, brisk_sampler* sm, int n) {
  std::vector<int32_t> out;
  brisk_generate_options g;
  brisk_generate_options_init(&g);
  g.max_tokens = n;
  g.stop_at_eos = 0;
  g.token_fn = collect;
  g.token_user_data = &out;
  REQUIRE(brisk_generate(s, sm, &g, nullptr, nullptr) == BRISK_OK);
  return out;
}

std::vector<int32_t> tokenize(brisk_model* m, const std::string& text) {
  std::vector<int32_t> t(512);
  size_t n = 0;
  REQUIRE(brisk_tokenize(m, text.data(), text.size(), BRISK_TOKENIZE_ADD_BOS, t.data(), t.size(), &n) == BRISK_OK);
  t.resize(n);
  return t;
}

std::string state_path(const char* name) { return (brisk::test::scratch_dir() / name).string(); }

}  // namespace

TEST_CASE("state: a restored session continues exactly, greedy and sampled", "[state]") {
  BRISK_TEST_FILE(path, "models/stories260K.gguf");
  Model model(path);
  for (float temperature : {0.0f, 0.9f}) {
    const std::string file = state_path("session.state");
    std::vector<int32_t> context = tokenize(model.m, "Once upon a time, Lily");
    std::vector<int32_t> want;
    {
      Session s(model.m);
      Sampler sm(temperature);
      for (int32_t t : context) brisk_sampler_accept(sm.s, t);
      REQUIRE(brisk_session_eval(s.s, context.data(), context.size()) == BRISK_OK);
      const std::vector<int32_t> first = generate(s.s, sm.s, 12);
      context.insert(context.end(), first.begin(), first.end());
      REQUIRE(brisk_session_save_state(s.s, sm.s, context.data(), context.size(), file.c_str()) == BRISK_OK);
      want = generate(s.s, sm.s, 30);  // as if it had never stopped
    }
    Session s(model.m);
    Sampler sm(0.5f);  // settings and generator come from the file
    REQUIRE(brisk_session_load_state(s.s, sm.s, file.c_str()) == BRISK_OK);
    CHECK(brisk_session_position(s.s) == context.size());
    CHECK(generate(s.s, sm.s, 30) == want);
    size_t n = 0;
    std::vector<int32_t> saved(512);
    REQUIRE(brisk_state_file_tokens(file.c_str(), saved.data(), saved.size(), &n) == BRISK_OK);
    saved.resize(n);
    CHECK(saved == context);
  }
}

TEST_CASE("state: another model, other cache types and damaged files are refused", "[state]") {
  BRISK_TEST_FILE(path, "models/stories260K.gguf");
  BRISK_TEST_FILE(other_path, "models/stories260K-q8_0.gguf");
  Model model(path), other(other_path);
  const std::string file = state_path("refuse.state");
  const std::vector<int32_t> prompt = tokenize(model.m, "The dog");
  {
    Session s(model.m);
    REQUIRE(brisk_session_eval(s.s, prompt.data(), prompt.size()) == BRISK_OK);
    CHECK(brisk_session_save_state(s.s, nullptr, prompt.data(), prompt.size() - 1, file.c_str()) ==
          BRISK_ERR_INVALID_ARGUMENT);
    REQUIRE(brisk_session_save_state(s.s, nullptr, prompt.data(), prompt.size(), file.c_str()) == BRISK_OK);
  }
  {
    Session s(other.m);
    CHECK(brisk_session_load_state(s.s, nullptr, file.c_str()) == BRISK_ERR_INVALID_ARGUMENT);
    CHECK(std::string(brisk_last_error()).find("another model") != std::string::npos);
  }
  {
    Session s(model.m, BRISK_TYPE_F16);  // the default for an F32 model is F32
    CHECK(brisk_session_load_state(s.s, nullptr, file.c_str()) == BRISK_ERR_INVALID_ARGUMENT);
    CHECK(std::string(brisk_last_error()).find("KV cache") != std::string::npos);
  }
  std::ifstream in(file, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  std::string damaged = bytes;
  damaged[damaged.size() / 2] ^= 0x40;
  std::ofstream(file, std::ios::binary) << damaged;
  Session s(model.m);
  CHECK(brisk_session_load_state(s.s, nullptr, file.c_str()) == BRISK_ERR_CHECKSUM);
  std::ofstream(file, std::ios::binary) << bytes.substr(0, bytes.size() / 3);
  CHECK(brisk_session_load_state(s.s, nullptr, file.c_str()) == BRISK_ERR_CHECKSUM);
  std::ofstream(file, std::ios::binary) << "not a state";
  CHECK(brisk_session_load_state(s.s, nullptr, file.c_str()) == BRISK_ERR_BAD_FORMAT);
  CHECK(brisk_session_load_state(s.s, nullptr, state_path("missing.state").c_str()) == BRISK_ERR_NOT_FOUND);
  CHECK(brisk_session_position(s.s) == 0);  // refused loads change nothing
}

TEST_CASE("state: an engine sequence saved and loaded in another engine generates the same", "[state][seq_state]") {
  BRISK_TEST_FILE(path, "models/stories260K.gguf");
  Model model(path);
  const std::string file = state_path("sequence.state");
  brisk_engine_options eo;
  brisk_engine_options_init(&eo);
  eo.n_ctx = 128;
  eo.n_seq_max = 2;
  eo.n_threads = 1;
  brisk_sampler_options greedy;
  brisk_sampler_options_init(&greedy);
  greedy.temperature = 0;
  brisk_generate_options g;
  brisk_generate_options_init(&g);
  g.max_tokens = 24;
  g.stop_at_eos = 0;
  auto run = [&](brisk_engine* e, brisk_sequence* s) {
    REQUIRE(brisk_sequence_generate(s, &greedy, &g) == BRISK_OK);
    while (brisk_sequence_get_state(s) != BRISK_SEQ_FINISHED) REQUIRE(brisk_engine_step(e, nullptr) == BRISK_OK);
    std::vector<int32_t> out(64);
    size_t n = 0;
    REQUIRE(brisk_sequence_generated(s, out.data(), out.size(), &n) == BRISK_OK);
    out.resize(n);
    return out;
  };
  const std::string prompt = "One day, a little bird";
  std::vector<int32_t> want;
  {
    brisk_engine* e = nullptr;
    REQUIRE(brisk_engine_create(model.m, &eo, &e) == BRISK_OK);
    brisk_sequence* s = nullptr;
    REQUIRE(brisk_sequence_create(e, &s) == BRISK_OK);
    REQUIRE(brisk_sequence_add_text(s, prompt.data(), prompt.size(), BRISK_TOKENIZE_ADD_BOS) == BRISK_OK);
    CHECK(brisk_sequence_save_state(s, file.c_str()) == BRISK_ERR_INVALID_ARGUMENT);  // not evaluated yet
    while (brisk_sequence_get_state(s) != BRISK_SEQ_IDLE) REQUIRE(brisk_engine_step(e, nullptr) == BRISK_OK);
    REQUIRE(brisk_sequence_save_state(s, file.c_str()) == BRISK_OK);
    want = run(e, s);
    brisk_engine_free(e);
  }
  brisk_engine* e = nullptr;
  REQUIRE(brisk_engine_create(model.m, &eo, &e) == BRISK_OK);
  brisk_sequence* s = nullptr;
  REQUIRE(brisk_sequence_load_state(e, file.c_str(), &s) == BRISK_OK);
  CHECK(brisk_sequence_get_state(s) == BRISK_SEQ_IDLE);
  CHECK(run(e, s) == want);
  brisk_engine_free(e);
}

namespace {

// An engine of two slots on one thread, and what a generation produced.
struct Engine {
  brisk_engine* e = nullptr;
  explicit Engine(brisk_model* m, int32_t cache_type = BRISK_TYPE_AUTO) {
    brisk_engine_options o;
    brisk_engine_options_init(&o);
    o.n_ctx = 128;
    o.n_seq_max = 2;
    o.n_threads = 1;
    o.cache_type_k = o.cache_type_v = cache_type;
    REQUIRE(brisk_engine_create(m, &o, &e) == BRISK_OK);
  }
  ~Engine() { brisk_engine_free(e); }
};

struct Output {
  std::vector<int32_t> tokens;
  std::string text;
};

int collect_output(void* ud, int32_t token, const char* text, size_t len) {
  auto* out = static_cast<Output*>(ud);
  if (token >= 0) out->tokens.push_back(token);
  out->text.append(text, len);
  return 0;
}

brisk_sampler_options seeded_sampler() {
  brisk_sampler_options o;
  brisk_sampler_options_init(&o);
  o.temperature = 0.8f;
  o.top_k = 40;
  o.top_p = 0.95f;
  o.seed = 1234;
  o.repeat_penalty = 1.1f;
  o.presence_penalty = 0.2f;
  o.frequency_penalty = 0.1f;
  return o;
}

brisk_generate_options generate_options(Output* out, int max_tokens = 40) {
  brisk_generate_options g;
  brisk_generate_options_init(&g);
  g.max_tokens = max_tokens;
  g.stop_at_eos = 0;
  g.token_fn = collect_output;
  g.token_user_data = out;
  return g;
}

std::vector<int32_t> generated(const brisk_sequence* s) {
  std::vector<int32_t> out(256);
  size_t n = 0;
  REQUIRE(brisk_sequence_generated(s, out.data(), out.size(), &n) == BRISK_OK);
  out.resize(n);
  return out;
}

const std::string kPrompt = "Once upon a time, there was a little";

// Starts the seeded generation and steps until `stop_after` tokens exist
// (or the end).
brisk_sequence* start(brisk_engine* e, Output* out, size_t stop_after) {
  brisk_sequence* s = nullptr;
  REQUIRE(brisk_sequence_create(e, &s) == BRISK_OK);
  REQUIRE(brisk_sequence_add_text(s, kPrompt.data(), kPrompt.size(), BRISK_TOKENIZE_ADD_BOS) == BRISK_OK);
  const brisk_sampler_options sm = seeded_sampler();
  const brisk_generate_options g = generate_options(out);
  REQUIRE(brisk_sequence_generate(s, &sm, &g) == BRISK_OK);
  while (brisk_sequence_get_state(s) != BRISK_SEQ_FINISHED && out->tokens.size() < stop_after)
    REQUIRE(brisk_engine_step(e, nullptr) == BRISK_OK);
  return s;
}

void finish(brisk_engine* e, brisk_sequence* s) {
  while (brisk_sequence_get_state(s) != BRISK_SEQ_FINISHED) REQUIRE(brisk_engine_step(e, nullptr) == BRISK_OK);
}

// Loads a file saved mid-generation into a new engine on its own model
// handle (as another process would), resumes it and returns what follows.
Output load_and_resume(const std::string& model_path, const std::string& file, bool step_first) {
  Model model(model_path);
  Engine e(model.m);
  brisk_sequence* s = nullptr;
  REQUIRE(brisk_sequence_load_state(e.e, file.c_str(), &s) == BRISK_OK);
  CHECK(brisk_sequence_get_state(s) == BRISK_SEQ_PREFILL);  // the sampled token is queued
  if (step_first) {
    REQUIRE(brisk_engine_step(e.e, nullptr) == BRISK_OK);
    CHECK(brisk_sequence_get_state(s) == BRISK_SEQ_IDLE);
  }
  Output out;
  const brisk_generate_options g = generate_options(&out, 1);  // max_tokens comes from the file
  REQUIRE(brisk_sequence_resume(s, &g) == BRISK_OK);
  CHECK(brisk_sequence_resume(s, &g) == BRISK_ERR_INVALID_ARGUMENT);  // once
  finish(e.e, s);
  CHECK(brisk_sequence_stop_reason(s) == BRISK_STOP_MAX_TOKENS);
  return out;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

}  // namespace

TEST_CASE("state: a generating sequence saved between steps resumes with the same tokens", "[state][seq_state]") {
  BRISK_TEST_FILE(path, "models/stories260K.gguf");
  Model model(path);
  Output want;
  {
    Engine e(model.m);
    finish(e.e, start(e.e, &want, SIZE_MAX));
  }
  REQUIRE(want.tokens.size() == 40);
  const std::string file = state_path("generating.state");
  for (size_t k : {size_t{1}, size_t{7}, size_t{20}, size_t{39}}) {
    for (bool step_first : {false, true}) {
      if (step_first && k != 7) continue;
      INFO("saved after " << k << " tokens" << (step_first ? ", stepped before resuming" : ""));
      Output before;
      std::string text_at_save;
      {
        Engine e(model.m);
        brisk_sequence* s = start(e.e, &before, k);
        REQUIRE(brisk_sequence_get_state(s) == BRISK_SEQ_GENERATING);
        REQUIRE(brisk_sequence_save_state(s, file.c_str()) == BRISK_OK);
        text_at_save = before.text;
        finish(e.e, s);  // saving leaves the generation as it was
        CHECK(generated(s) == want.tokens);
      }
      CHECK(read_bytes(file).substr(0, 8) == "BRISKSQ2");
      REQUIRE(before.tokens.size() >= k);
      before.tokens.resize(k);
      Output after = load_and_resume(path, file, step_first);
      std::vector<int32_t> all = before.tokens;
      all.insert(all.end(), after.tokens.begin(), after.tokens.end());
      CHECK(all == want.tokens);
      // The text as well: a character split over the save point completes.
      CHECK(text_at_save + after.text == want.text);
    }
  }
}

TEST_CASE("state: a generating sequence resumed in a separate process gives the same tokens", "[state][seq_state]") {
  BRISK_TEST_FILE(path, "models/stories260K.gguf");
  const std::string file = state_path("process.state");
  Output want, before;
  {
    Model model(path);
    Engine e(model.m);
    brisk_sequence* s = start(e.e, &before, 13);
    REQUIRE(brisk_sequence_save_state(s, file.c_str()) == BRISK_OK);
    finish(e.e, s);
    want.tokens = generated(s);
  }
  // No engine (and so no worker thread) exists while forking.
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    brisk_model* m = nullptr;
    brisk_engine* e = nullptr;
    brisk_sequence* s = nullptr;
    brisk_engine_options o;
    brisk_engine_options_init(&o);
    o.n_ctx = 128;
    o.n_seq_max = 2;
    o.n_threads = 1;
    if (brisk_model_open(path.c_str(), nullptr, &m) != BRISK_OK || brisk_engine_create(m, &o, &e) != BRISK_OK ||
        brisk_sequence_load_state(e, file.c_str(), &s) != BRISK_OK || brisk_sequence_resume(s, nullptr) != BRISK_OK)
      _exit(2);
    while (brisk_sequence_get_state(s) != BRISK_SEQ_FINISHED)
      if (brisk_engine_step(e, nullptr) != BRISK_OK) _exit(3);
    int32_t out[256];
    size_t n = 0;
    if (brisk_sequence_generated(s, out, 256, &n) != BRISK_OK) _exit(4);
    const ssize_t bytes = static_cast<ssize_t>(n * sizeof(int32_t));
    _exit(write(fds[1], out, n * sizeof(int32_t)) == bytes ? 0 : 5);
  }
  close(fds[1]);
  std::vector<int32_t> got(256);
  size_t have = 0;
  for (ssize_t r; (r = read(fds[0], reinterpret_cast<char*>(got.data()) + have, got.size() * 4 - have)) > 0;)
    have += static_cast<size_t>(r);
  close(fds[0]);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  got.resize(have / 4);
  CHECK(got == want.tokens);  // the tokens before the save point come from the file
}

TEST_CASE("state: a finished sequence saves its text, which loads and is evaluated again", "[state][seq_state]") {
  BRISK_TEST_FILE(path, "models/stories260K.gguf");
  Model model(path);
  const std::string file = state_path("finished.state");
  std::vector<int32_t> text = tokenize(model.m, kPrompt);
  {
    Engine e(model.m);
    Output out;
    brisk_sequence* s = start(e.e, &out, SIZE_MAX);
    REQUIRE(brisk_sequence_get_state(s) == BRISK_SEQ_FINISHED);
    REQUIRE(brisk_sequence_save_state(s, file.c_str()) == BRISK_OK);
    text.insert(text.end(), out.tokens.begin(), out.tokens.end());  // max_tokens: the last one is kept
  }
  std::vector<int32_t> saved(256);
  size_t n = 0;
  REQUIRE(brisk_state_file_tokens(file.c_str(), saved.data(), saved.size(), &n) == BRISK_OK);
  saved.resize(n);
  CHECK(saved == text);
  brisk_sampler_options greedy;
  brisk_sampler_options_init(&greedy);
  greedy.temperature = 0;
  // Loaded, it reads its text again; it continues as the same text added as a prompt.
  std::vector<Output> outs(2);
  for (int i = 0; i < 2; ++i) {
    Engine e(model.m);
    brisk_sequence* s = nullptr;
    if (i == 0) {
      REQUIRE(brisk_sequence_load_state(e.e, file.c_str(), &s) == BRISK_OK);
      CHECK(brisk_sequence_get_state(s) == BRISK_SEQ_PREFILL);
      CHECK(brisk_sequence_resume(s, nullptr) == BRISK_ERR_INVALID_ARGUMENT);  // no generation in progress
    } else {
      REQUIRE(brisk_sequence_create(e.e, &s) == BRISK_OK);
      REQUIRE(brisk_sequence_add_tokens(s, text.data(), text.size()) == BRISK_OK);
    }
    while (brisk_sequence_get_state(s) != BRISK_SEQ_IDLE) REQUIRE(brisk_engine_step(e.e, nullptr) == BRISK_OK);
    CHECK(brisk_sequence_position(s) == text.size());
    const brisk_generate_options g = generate_options(&outs[i], 10);
    REQUIRE(brisk_sequence_generate(s, &greedy, &g) == BRISK_OK);
    finish(e.e, s);
  }
  CHECK(outs[0].tokens == outs[1].tokens);
}

TEST_CASE("state: saved generations refuse other models, sessions, damage and newer formats", "[state][seq_state]") {
  BRISK_TEST_FILE(path, "models/stories260K.gguf");
  BRISK_TEST_FILE(other_path, "models/stories260K-q8_0.gguf");
  Model model(path), other(other_path);
  const std::string file = state_path("refuse-generating.state");
  {
    Engine e(model.m);
    Output out;
    brisk_sequence* s = start(e.e, &out, 5);
    REQUIRE(brisk_sequence_save_state(s, file.c_str()) == BRISK_OK);
    CHECK(brisk_sequence_resume(s, nullptr) == BRISK_ERR_INVALID_ARGUMENT);  // not loaded
    // Inside a callback the sequence is half way through a step.
    struct Probe {
      brisk_sequence* s;
      std::string file;
      brisk_status st = BRISK_OK;
    } probe{s, file};
    brisk_sequence* t = nullptr;
    REQUIRE(brisk_sequence_create(e.e, &t) == BRISK_OK);
    REQUIRE(brisk_sequence_add_text(t, kPrompt.data(), kPrompt.size(), BRISK_TOKENIZE_ADD_BOS) == BRISK_OK);
    brisk_generate_options g;
    brisk_generate_options_init(&g);
    g.max_tokens = 2;
    g.token_user_data = &probe;
    g.token_fn = [](void* ud, int32_t, const char*, size_t) {
      auto* p = static_cast<Probe*>(ud);
      p->st = brisk_sequence_save_state(p->s, (p->file + ".inside").c_str());
      return 0;
    };
    const brisk_sampler_options sm = seeded_sampler();
    REQUIRE(brisk_sequence_generate(t, &sm, &g) == BRISK_OK);
    finish(e.e, t);
    CHECK(probe.st == BRISK_ERR_INVALID_ARGUMENT);
  }
  {
    Engine e(other.m);
    brisk_sequence* s = nullptr;
    CHECK(brisk_sequence_load_state(e.e, file.c_str(), &s) == BRISK_ERR_INVALID_ARGUMENT);
    CHECK(std::string(brisk_last_error()).find("another model") != std::string::npos);
    CHECK(s == nullptr);
  }
  {
    Engine e(model.m, BRISK_TYPE_F16);  // the default for an F32 model is F32
    brisk_sequence* s = nullptr;
    CHECK(brisk_sequence_load_state(e.e, file.c_str(), &s) == BRISK_ERR_INVALID_ARGUMENT);
    CHECK(std::string(brisk_last_error()).find("KV cache") != std::string::npos);
  }
  {
    Session s(model.m);
    CHECK(brisk_session_load_state(s.s, nullptr, file.c_str()) == BRISK_ERR_INVALID_ARGUMENT);
    CHECK(std::string(brisk_last_error()).find("brisk_sequence_load_state") != std::string::npos);
    CHECK(brisk_session_position(s.s) == 0);
  }
  const std::string bytes = read_bytes(file);
  Engine e(model.m);
  brisk_sequence* s = nullptr;
  std::string damaged = bytes;
  damaged[damaged.size() / 2] ^= 0x01;
  std::ofstream(file, std::ios::binary) << damaged;
  CHECK(brisk_sequence_load_state(e.e, file.c_str(), &s) == BRISK_ERR_CHECKSUM);
  // A newer format, checksummed as brisk would write it.
  std::string newer = bytes.substr(0, bytes.size() - 16);
  newer[7] = '3';
  const brisk::bundle::Hash128 sum = brisk::bundle::hash_bytes(newer.data(), newer.size());
  newer.append(reinterpret_cast<const char*>(sum.bytes), sizeof sum.bytes);
  std::ofstream(file, std::ios::binary) << newer;
  CHECK(brisk_sequence_load_state(e.e, file.c_str(), &s) == BRISK_ERR_UNSUPPORTED);
  CHECK(std::string(brisk_last_error()).find("format version 3") != std::string::npos);
  std::ofstream(file, std::ios::binary) << bytes;
  REQUIRE(brisk_sequence_load_state(e.e, file.c_str(), &s) == BRISK_OK);
  // Adding tokens drops the saved generation.
  const int32_t more = 1;
  REQUIRE(brisk_sequence_add_tokens(s, &more, 1) == BRISK_OK);
  CHECK(brisk_sequence_resume(s, nullptr) == BRISK_ERR_INVALID_ARGUMENT);
}

TEST_CASE("state: an idle sequence still writes the first format", "[state][seq_state]") {
  BRISK_TEST_FILE(path, "models/stories260K.gguf");
  Model model(path);
  const std::string file = state_path("idle-v1.state");
  Engine e(model.m);
  brisk_sequence* s = nullptr;
  REQUIRE(brisk_sequence_create(e.e, &s) == BRISK_OK);
  REQUIRE(brisk_sequence_add_text(s, kPrompt.data(), kPrompt.size(), BRISK_TOKENIZE_ADD_BOS) == BRISK_OK);
  while (brisk_sequence_get_state(s) != BRISK_SEQ_IDLE) REQUIRE(brisk_engine_step(e.e, nullptr) == BRISK_OK);
  REQUIRE(brisk_sequence_save_state(s, file.c_str()) == BRISK_OK);
  CHECK(read_bytes(file).substr(0, 8) == "BRISKSQ1");  // libraries before ABI 0.7 read it
  brisk_sequence* t = nullptr;
  REQUIRE(brisk_sequence_load_state(e.e, file.c_str(), &t) == BRISK_OK);
  CHECK(brisk_sequence_get_state(t) == BRISK_SEQ_IDLE);
  CHECK(brisk_sequence_position(t) == brisk_sequence_position(s));
}

TEST_CASE("loading: no_mmap gives the same model, mlock beyond RLIMIT_MEMLOCK says so", "[state]") {
  BRISK_TEST_FILE(path, "models/stories260K.gguf");
  Model mapped(path), read(path, 1);
  std::vector<int32_t> a, b;
  for (Model* m : {&mapped, &read}) {
    Session s(m->m);
    Sampler sm(0);
    const std::vector<int32_t> p = tokenize(m->m, "Once upon a time");
    REQUIRE(brisk_session_eval(s.s, p.data(), p.size()) == BRISK_OK);
    (m == &mapped ? a : b) = generate(s.s, sm.s, 20);
  }
  CHECK(a == b);
  // In a child without CAP_IPC_LOCK (which would let root lock past the
  // limit) and with a 4 KiB RLIMIT_MEMLOCK, mlock must be refused with the numbers.
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct caps[2]{};
    if (syscall(SYS_capget, &hdr, caps) == 0) {
      caps[0].effective &= ~(1u << CAP_IPC_LOCK);
      caps[0].permitted &= ~(1u << CAP_IPC_LOCK);
      syscall(SYS_capset, &hdr, caps);
    }
    rlimit low{4096, 4096};
    if (setrlimit(RLIMIT_MEMLOCK, &low) != 0) _exit(3);
    brisk_model_options lo;
    brisk_model_options_init(&lo);
    lo.mlock = 1;
    brisk_model* m = nullptr;
    const brisk_status st = brisk_model_open(path.c_str(), &lo, &m);
    const std::string err = brisk_last_error();
    _exit(st == BRISK_ERR_OUT_OF_MEMORY && err.find("RLIMIT_MEMLOCK is 0.0 MiB") != std::string::npos ? 0
          : st == BRISK_OK ? 1 : 2);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  brisk_model_options o;
  brisk_model_options_init(&o);
  brisk_model* m = nullptr;
  o.mlock = 1;
  o.no_mmap = 1;
  if (brisk_model_open(path.c_str(), &o, &m) == BRISK_OK) brisk_model_close(m);  // within the normal limit
}
