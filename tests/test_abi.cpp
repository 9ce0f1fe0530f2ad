// SPDX-License-Identifier: MIT
// Option structs grow at the end: a caller built against an older, smaller
// struct must get only the bytes it has, and the library must read only those.
#include <brisk/brisk.h>
#include <sched.h>

#include <catch2/catch.hpp>
#include <cstddef>
#include <cstring>
#include <string>

#include "memlock_util.h"
#include "test_data.h"

TEST_CASE("abi: options_init writes only the caller's struct size", "[abi]") {
  unsigned char buf[sizeof(brisk_session_options) + 16];
  std::memset(buf, 0xAB, sizeof buf);
  // An "old" caller that knows the fields up to n_batch only.
  const size_t old_size = offsetof(brisk_session_options, abort_fn);
  brisk_session_options_init_sized(reinterpret_cast<brisk_session_options*>(buf), old_size);
  brisk_session_options* o = reinterpret_cast<brisk_session_options*>(buf);
  CHECK(o->struct_size == old_size);
  CHECK(o->n_batch == 512);
  for (size_t i = old_size; i < sizeof buf; ++i) CHECK(buf[i] == 0xAB);
}

TEST_CASE("abi: the library reads only struct_size bytes of options", "[abi]") {
  BRISK_TEST_FILE(path, "models/stories260K.gguf");
  brisk_model* m = nullptr;
  REQUIRE(brisk_model_open(path.c_str(), nullptr, &m) == BRISK_OK);
  unsigned char buf[sizeof(brisk_session_options)];
  std::memset(buf, 0xFF, sizeof buf);  // garbage beyond the old size
  const size_t old_size = offsetof(brisk_session_options, abort_fn);
  brisk_session_options_init_sized(reinterpret_cast<brisk_session_options*>(buf), old_size);
  brisk_session* s = nullptr;
  CHECK(brisk_session_create(m, reinterpret_cast<brisk_session_options*>(buf), &s) == BRISK_OK);
  int32_t bos = brisk_model_token_bos(m);
  CHECK(brisk_session_eval(s, &bos, 1) == BRISK_OK);
  brisk_session_free(s);
  brisk_model_close(m);
}

namespace {

// A tiny synthetic model, so these tests need no data files.
brisk_model* open_tiny() {
  brisk_synthesize_options so;
  brisk_synthesize_options_init(&so);
  so.shape = "tiny";
  brisk_model* m = nullptr;
  REQUIRE(brisk_model_open_synthetic(&so, nullptr, &m) == BRISK_OK);
  return m;
}

// A struct as a newer header would declare it: ours plus fields we lack.
template <class T>
struct Newer {
  T known;
  uint64_t unknown[2];
};

}  // namespace

TEST_CASE("abi: a newer program's larger struct is accepted while its unknown tail is zero", "[abi]") {
  brisk_model* m = open_tiny();
  Newer<brisk_session_options> o;
  std::memset(&o, 0, sizeof o);
  brisk_session_options_init(&o.known);
  o.known.struct_size = sizeof o;  // what the newer program's init would say
  o.known.n_threads = 1;
  o.known.n_ctx = 32;
  brisk_session* s = nullptr;
  CHECK(brisk_session_create(m, &o.known, &s) == BRISK_OK);
  brisk_session_free(s);

  // A field the library does not know, set: refused, naming the library.
  o.unknown[1] = 1;
  s = nullptr;
  CHECK(brisk_session_create(m, &o.known, &s) == BRISK_ERR_UNSUPPORTED);
  CHECK(s == nullptr);
  const std::string err = brisk_last_error();
  INFO(err);
  CHECK(err.find("libbrisk " + std::string(brisk_version())) != std::string::npos);
  CHECK(err.find("newer libbrisk") != std::string::npos);

  // The same rule for another struct, through brisk_sampler_create.
  Newer<brisk_sampler_options> so;
  std::memset(&so, 0, sizeof so);
  brisk_sampler_options_init(&so.known);
  so.known.struct_size = sizeof so;
  brisk_sampler* sampler = nullptr;
  CHECK(brisk_sampler_create(&so.known, &sampler) == BRISK_OK);
  brisk_sampler_free(sampler);
  so.unknown[0] = 0x100;
  sampler = nullptr;
  CHECK(brisk_sampler_create(&so.known, &sampler) == BRISK_ERR_UNSUPPORTED);
  CHECK(sampler == nullptr);
  brisk_model_close(m);
}

TEST_CASE("abi: header, library and CMake agree on the version", "[abi]") {
  CHECK(brisk_abi_version() == ((uint32_t{BRISK_ABI_VERSION_MAJOR} << 16) | BRISK_ABI_VERSION_MINOR));
  const std::string v = std::to_string(BRISK_VERSION_MAJOR) + "." + std::to_string(BRISK_VERSION_MINOR) + "." +
                        std::to_string(BRISK_VERSION_PATCH);
  CHECK(std::string(brisk_version()) == v);
}

TEST_CASE("abi: type names round-trip and match the tools' spelling", "[abi]") {
  const struct {
    brisk_type type;
    const char* name;
  } expected[] = {{BRISK_TYPE_AUTO, "auto"}, {BRISK_TYPE_F32, "f32"},   {BRISK_TYPE_F16, "f16"},
                  {BRISK_TYPE_BF16, "bf16"}, {BRISK_TYPE_Q8_0, "q8_0"}, {BRISK_TYPE_Q4_0, "q4_0"},
                  {BRISK_TYPE_Q4_1, "q4_1"}, {BRISK_TYPE_Q4_K, "q4_k"}, {BRISK_TYPE_Q5_K, "q5_k"},
                  {BRISK_TYPE_Q6_K, "q6_k"}};
  for (const auto& e : expected) {
    INFO(e.name);
    REQUIRE(brisk_type_name(e.type) != nullptr);
    CHECK(std::string(brisk_type_name(e.type)) == e.name);
    brisk_type t = BRISK_TYPE_F32;
    CHECK(brisk_type_from_name(e.name, &t) == BRISK_OK);
    CHECK(t == e.type);
  }
  brisk_type t = BRISK_TYPE_F32;
  CHECK(brisk_type_from_name("Q4_K", &t) == BRISK_OK);
  CHECK(t == BRISK_TYPE_Q4_K);
  CHECK(brisk_type_name(static_cast<brisk_type>(6)) == nullptr);  // q5_0: a GGUF type, not a brisk_type
  CHECK(brisk_type_name(static_cast<brisk_type>(1000)) == nullptr);
  CHECK(brisk_type_from_name("q5_0", &t) == BRISK_ERR_NOT_FOUND);
  CHECK(std::string(brisk_last_error()).find("q4_k") != std::string::npos);
  CHECK(brisk_type_from_name(nullptr, &t) == BRISK_ERR_INVALID_ARGUMENT);
  CHECK(brisk_type_from_name("f16", nullptr) == BRISK_ERR_INVALID_ARGUMENT);
}

TEST_CASE("abi: the library leaves the calling thread's CPU mask alone unless asked", "[abi]") {
  cpu_set_t before, during, after;
  REQUIRE(sched_getaffinity(0, sizeof before, &before) == 0);
  brisk_model* m = open_tiny();
  {
    brisk_engine_options o;
    brisk_engine_options_init(&o);
    CHECK(o.pin_caller == 0);
    o.n_threads = 2;
    o.n_seq_max = 1;
    o.n_ctx = 32;
    brisk_engine* e = nullptr;
    REQUIRE(brisk_engine_create(m, &o, &e) == BRISK_OK);
    REQUIRE(sched_getaffinity(0, sizeof during, &during) == 0);
    CHECK(CPU_EQUAL(&before, &during));
    brisk_engine_free(e);

    o.pin_caller = 1;
    REQUIRE(brisk_engine_create(m, &o, &e) == BRISK_OK);
    REQUIRE(sched_getaffinity(0, sizeof during, &during) == 0);
    CHECK(CPU_COUNT(&during) == 1);
    brisk_engine_free(e);
  }
  {
    brisk_session_options o;
    brisk_session_options_init(&o);
    CHECK(o.pin_caller == 0);
    o.n_threads = 1;
    o.n_ctx = 32;
    brisk_session* s = nullptr;
    REQUIRE(brisk_session_create(m, &o, &s) == BRISK_OK);
    int32_t bos = brisk_model_token_bos(m);
    CHECK(brisk_session_eval(s, &bos, 1) == BRISK_OK);
    REQUIRE(sched_getaffinity(0, sizeof during, &during) == 0);
    CHECK(CPU_EQUAL(&before, &during));
    brisk_session_free(s);
  }
  REQUIRE(sched_getaffinity(0, sizeof after, &after) == 0);
  CHECK(CPU_EQUAL(&before, &after));
  brisk_model_close(m);
}

namespace {

// options_init_sized with the size a 0.5 program knows (up to mlock) must
// write nothing past it.
template <class T>
void check_old_init(void (*init_sized)(T*, size_t)) {
  unsigned char buf[sizeof(T) + 16];
  std::memset(buf, 0xAB, sizeof buf);
  const size_t old_size = offsetof(T, mlock);
  init_sized(reinterpret_cast<T*>(buf), old_size);
  CHECK(reinterpret_cast<T*>(buf)->struct_size == old_size);
  for (size_t i = old_size; i < sizeof buf; ++i) CHECK(buf[i] == 0xAB);
  T full;
  init_sized(&full, sizeof full);
  CHECK(full.mlock == 0);
  CHECK(full.no_mmap == 0);
}

// A struct as a program built against ABI 0.5 passes it: its own size, and
// whatever happens to follow in memory (here all bits set, which read as
// mlock and no_mmap would ask for a lock).
template <class T>
struct OldCaller {
  T options;
  OldCaller(void (*init_sized)(T*, size_t)) {
    std::memset(&options, 0xFF, sizeof options);
    init_sized(&options, offsetof(T, mlock));
  }
};

}  // namespace

TEST_CASE("abi: toolchain options from before ABI 0.6 are read only up to their struct_size", "[abi]") {
  check_old_init(brisk_quantize_options_init_sized);
  check_old_init(brisk_calibrate_options_init_sized);
  check_old_init(brisk_verify_options_init_sized);
  check_old_init(brisk_convert_options_init_sized);
  check_old_init(brisk_pack_options_init_sized);

  const std::string d = brisk::test::scratch_dir().string();
  const std::string model = d + "/abi-old-options.gguf";
  brisk_synthesize_options so;
  brisk_synthesize_options_init(&so);
  so.shape = "tiny";
  so.weight_type = "f16";
  REQUIRE(brisk_synthesize_model(model.c_str(), &so) == BRISK_OK);
  // Where no page can be locked, a call that read the old caller's tail as
  // mlock would fail; the same call asking for mlock must.
  const int code = brisk::test::with_low_memlock([&] {
    OldCaller<brisk_verify_options> v(brisk_verify_options_init_sized);
    if (brisk_verify(model.c_str(), &v.options, nullptr) != BRISK_OK) return 1;
    OldCaller<brisk_quantize_options> q(brisk_quantize_options_init_sized);
    if (brisk_quantize(model.c_str(), (d + "/abi-old-q.gguf").c_str(), &q.options) != BRISK_OK) return 2;
    OldCaller<brisk_pack_options> p(brisk_pack_options_init_sized);
    if (brisk_pack(model.c_str(), (d + "/abi-old.brisk").c_str(), &p.options) != BRISK_OK) return 3;
    brisk_verify_options now;
    brisk_verify_options_init(&now);
    now.mlock = 1;
    if (brisk_verify(model.c_str(), &now, nullptr) != BRISK_ERR_OUT_OF_MEMORY) return 4;
    if (std::string(brisk_last_error()).find("RLIMIT_MEMLOCK") == std::string::npos) return 5;
    return 0;
  });
  if (code == brisk::test::kCannotDropLock) {
    WARN("skipped: this process cannot give up CAP_IPC_LOCK");
    return;
  }
  CHECK(code == 0);
}
