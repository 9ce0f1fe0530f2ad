// SPDX-License-Identifier: MIT
// Helpers for the [convert] and [bundle] tests: file bytes, greedy text
// through brisk.h, and converting the shared stories260K checkpoints.
#pragma once
#include <brisk/brisk.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "test_data.h"

namespace brisk::test {


inline int append_text(void* ud, int32_t, const char* text, size_t len) {
  static_cast<std::string*>(ud)->append(text, len);
  return 0;
}

// n greedy tokens after BOS, through the C API only.
inline std::string greedy_text(const std::string& path, int n) {
  brisk_model* m = nullptr;
  REQUIRE(brisk_model_open(path.c_str(), nullptr, &m) == BRISK_OK);
  brisk_session_options so;
  brisk_session_options_init(&so);
  so.n_ctx = 256;
  so.n_threads = 2;
  brisk_session* s = nullptr;
  REQUIRE(brisk_session_create(m, &so, &s) == BRISK_OK);
  int32_t bos = brisk_model_token_bos(m);
  REQUIRE(brisk_session_eval(s, &bos, 1) == BRISK_OK);
  brisk_sampler_options sp;
  brisk_sampler_options_init(&sp);
  sp.temperature = 0;
  brisk_sampler* smp = nullptr;
  REQUIRE(brisk_sampler_create(&sp, &smp) == BRISK_OK);
  brisk_generate_options go;
  brisk_generate_options_init(&go);
  go.max_tokens = n;
  go.stop_at_eos = 0;
  std::string text;
  go.token_fn = append_text;
  go.token_user_data = &text;
  size_t n_gen = 0;
  REQUIRE(brisk_generate(s, smp, &go, &n_gen, nullptr) == BRISK_OK);
  CHECK(n_gen == static_cast<size_t>(n));
  brisk_sampler_free(smp);
  brisk_session_free(s);
  brisk_model_close(m);
  return text;
}

// Converts a Hugging Face directory into the scratch directory.
inline std::string convert_hf_to(const std::string& dir, const std::string& out_name, int32_t type = BRISK_TYPE_AUTO,
                                 const char* name = nullptr) {
  const std::string out = (scratch_dir() / out_name).string();
  brisk_convert_options o;
  brisk_convert_options_init(&o);
  o.type = type;
  o.name = name;
  o.n_threads = 2;
  const brisk_status st = brisk_convert_hf(dir.c_str(), out.c_str(), &o);
  INFO(brisk_last_error());
  REQUIRE(st == BRISK_OK);
  return out;
}

}  // namespace brisk::test
