// SPDX-License-Identifier: MIT
// brisk_quantize against llama-quantize's own files: same tensor order, same
// types, the very same bytes; metadata as llama.cpp writes it.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "brisk/brisk.h"
#include "gguf/gguf.h"
#include "quantize/recipe.h"
#include "test_data.h"

namespace {

using brisk::gguf::File;

std::string quantize_to(const std::string& in, const std::string& type, std::vector<const char*> overrides = {},
                        uint32_t threads = 0) {
  const std::string out = (brisk::test::scratch_dir() / ("q-" + type + "-" + std::to_string(threads) + "-" +
                                                         std::to_string(overrides.size()) + ".gguf"))
                              .string();
  brisk_quantize_options o;
  brisk_quantize_options_init(&o);
  o.type = type.c_str();
  o.tensor_types = overrides.data();
  o.n_tensor_types = overrides.size();
  o.n_threads = threads;
  const brisk_status st = brisk_quantize(in.c_str(), out.c_str(), &o);
  INFO(brisk_last_error());
  REQUIRE(st == BRISK_OK);
  return out;
}

// Same tensors in the same order with the same types and bytes.
void require_same_tensors(const File& a, const File& b) {
  REQUIRE(a.tensors().size() == b.tensors().size());
  for (size_t i = 0; i < a.tensors().size(); ++i) {
    const auto& x = a.tensors()[i];
    const auto& y = b.tensors()[i];
    INFO("tensor " << i << " " << x.name << " vs " << y.name);
    REQUIRE(x.name == y.name);
    REQUIRE(x.type == y.type);
    REQUIRE(x.n_bytes == y.n_bytes);
    CHECK(std::memcmp(x.data, y.data, x.n_bytes) == 0);
  }
}

}  // namespace

TEST_CASE("quantize: stories260K q8_0/q4_0/q4_1/f16 equal llama-quantize's files", "[quantize]") {
  BRISK_TEST_FILE(src, "models/stories260K.gguf");
  for (const char* t : {"q8_0", "q4_0", "q4_1", "f16"}) {
    BRISK_TEST_FILE(ref, std::string("models/stories260K-") + t + ".gguf");
    INFO("type " << t);
    const File mine(quantize_to(src, t));
    const File theirs(ref);
    require_same_tensors(mine, theirs);
    // Metadata: the input's keys, then quantization_version and file_type
    // (then brisk's checksum manifest, which llama.cpp's file does not have).
    REQUIRE(mine.metadata().size() == theirs.metadata().size() + 6);
    CHECK(mine.metadata()[theirs.metadata().size()].first == "brisk.manifest.version");
    for (size_t i = 0; i < theirs.metadata().size(); ++i) {
      CHECK(mine.metadata()[i].first == theirs.metadata()[i].first);
      CHECK(mine.metadata()[i].second.to_string() == theirs.metadata()[i].second.to_string());
    }
    // Fallbacks as llama.cpp: ffn_down (172 cols) F16; output Q8_0 for the 4-bit types.
    CHECK(mine.find_tensor("blk.0.ffn_down.weight")->type == brisk::TensorType::F16);
    CHECK(mine.find_tensor("output_norm.weight")->type == brisk::TensorType::F32);
  }
}

TEST_CASE("quantize: logstories q4_k_m equals llama-quantize file for any thread count", "[quantize]") {
  BRISK_TEST_FILE(src, "models/logstories/logstories-f32.gguf");
  BRISK_TEST_FILE(ref, "models/logstories/logstories-q4_k_m.gguf");
  const File theirs(ref);
  const File one(quantize_to(src, "q4_k_m", {}, 1));
  require_same_tensors(one, theirs);
  CHECK(one.get_uint("general.file_type") == 15);
  CHECK(one.get_uint("general.quantization_version") == 2);
  // use_more_bits(i, 6): layers 2 and 5 get Q6_K for attn_v and ffn_down.
  CHECK(one.find_tensor("blk.2.attn_v.weight")->type == brisk::TensorType::Q6_K);
  CHECK(one.find_tensor("blk.3.ffn_down.weight")->type == brisk::TensorType::Q4_K);
  const File two(quantize_to(src, "q4_k_m", {}, 2));
  require_same_tensors(two, theirs);
}

TEST_CASE("quantize: regex overrides (first match wins) and the mixed-4-8 preset", "[quantize]") {
  BRISK_TEST_FILE(src, "models/stories260K.gguf");
  const File f(quantize_to(src, "q4_0", {"attn_q=q8_0", "attn_.*=q4_1", "attn_q=f16"}));
  CHECK(f.find_tensor("blk.1.attn_q.weight")->type == brisk::TensorType::Q8_0);
  CHECK(f.find_tensor("blk.1.attn_k.weight")->type == brisk::TensorType::Q4_1);
  CHECK(f.find_tensor("blk.1.ffn_up.weight")->type == brisk::TensorType::Q4_0);
  const File m(quantize_to(src, "mixed-4-8"));
  CHECK(m.find_tensor("blk.0.attn_v.weight")->type == brisk::TensorType::Q8_0);
  CHECK(m.find_tensor("blk.0.attn_output.weight")->type == brisk::TensorType::Q8_0);
  // 64-col rows do not fit Q4_K's 256: Q4_0.
  CHECK(m.find_tensor("blk.0.ffn_gate.weight")->type == brisk::TensorType::Q4_0);

  brisk_quantize_options o;
  brisk_quantize_options_init(&o);
  o.type = "q3_xx";
  CHECK(brisk_quantize(src.c_str(), (brisk::test::scratch_dir() / "bad.gguf").c_str(), &o) ==
        BRISK_ERR_INVALID_ARGUMENT);
  const char* bad[] = {"attn_q"};
  o.type = "q4_0";
  o.tensor_types = bad;
  o.n_tensor_types = 1;
  CHECK(brisk_quantize(src.c_str(), (brisk::test::scratch_dir() / "bad.gguf").c_str(), &o) ==
        BRISK_ERR_INVALID_ARGUMENT);
}

TEST_CASE("quantize: use_more_bits and fit_type follow llama.cpp", "[quantize]") {
  using brisk::quantize::fit_type;
  using brisk::quantize::use_more_bits;
  std::vector<int> more;
  for (int i = 0; i < 32; ++i)
    if (use_more_bits(i, 32)) more.push_back(i);
  CHECK(more == std::vector<int>{0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31});
  CHECK(fit_type(brisk::TensorType::Q6_K, 64) == brisk::TensorType::Q8_0);
  CHECK(fit_type(brisk::TensorType::Q4_0, 172) == brisk::TensorType::F16);
  CHECK(fit_type(brisk::TensorType::Q4_K, 512) == brisk::TensorType::Q4_K);
}

TEST_CASE("quantize: cancelling leaves no output", "[quantize]") {
  BRISK_TEST_FILE(src, "models/stories260K.gguf");
  const auto out = brisk::test::scratch_dir() / "cancelled.gguf";
  brisk_quantize_options o;
  brisk_quantize_options_init(&o);
  o.abort_fn = [](void*) { return 1; };
  CHECK(brisk_quantize(src.c_str(), out.c_str(), &o) == BRISK_ERR_CANCELLED);
  CHECK_FALSE(std::filesystem::exists(out));
}
