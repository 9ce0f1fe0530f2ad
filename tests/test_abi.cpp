// Option structs grow at the end: a caller built against an older, smaller
// struct must get only the bytes it has, and the library must read only those.
#include <brisk/brisk.h>

#include <catch2/catch.hpp>
#include <cstddef>
#include <cstring>

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
