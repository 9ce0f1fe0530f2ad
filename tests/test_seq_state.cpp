// SPDX-License-Identifier: MIT
// Saved state: a context written to disk and read back continues exactly as
// if it had never stopped; other models, other cache types and damaged files
// are refused with the reason. Also the loading options (no_mmap, mlock).
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

TEST_CASE("state: an engine sequence saved and loaded in another engine generates the same", "[state]") {
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
