// SPDX-License-Identifier: MIT
// Converters against llama.cpp's own files for stories260K: the Hugging Face
// folders and the llama2.c checkpoint must give the same tensors (byte for
// byte) and the same greedy text as the GGUFs llama.cpp made.
#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>

#include "convert_util.h"
#include "core/fp16.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

using namespace brisk;
using brisk::test::scratch_dir;

namespace {

std::string tensor_bytes(const gguf::TensorInfo& t) {
  return std::string(reinterpret_cast<const char*>(t.data), t.n_bytes);
}

// Every tensor of `got` exists in `ref` with the same shape and type and
// identical bytes; returns how many were compared.
size_t expect_same_tensors(const gguf::File& got, const gguf::File& ref) {
  size_t n = 0;
  for (const gguf::TensorInfo& t : got.tensors()) {
    INFO("tensor " << t.name);
    const gguf::TensorInfo* r = ref.find_tensor(t.name);
    REQUIRE(r);
    CHECK(t.shape_string() == r->shape_string());
    CHECK(t.type == r->type);
    CHECK(tensor_bytes(t) == tensor_bytes(*r));
    ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("convert: HF F32 folder gives stories260K.gguf's tensors byte for byte", "[convert]") {
  BRISK_TEST_FILE(dir, "models/stories260K-hf-f32");
  BRISK_TEST_FILE(ref_path, "models/stories260K.gguf");
  gguf::File got(test::convert_hf_to(dir, "hf-f32.gguf"));
  gguf::File ref(ref_path);
  // Tied embeddings: no output.weight, as llama.cpp's HF converter writes them.
  CHECK(got.find_tensor("output.weight") == nullptr);
  CHECK(expect_same_tensors(got, ref) == 47);
  // llama2c's file stores the tied classifier separately: it must be the embeddings.
  CHECK(tensor_bytes(*ref.find_tensor("output.weight")) == tensor_bytes(*got.find_tensor("token_embd.weight")));
  CHECK(got.get_string("general.architecture") == "llama");
  CHECK(got.get_uint("llama.block_count") == 5);
  CHECK(got.get_uint("llama.attention.head_count_kv") == 4);
  CHECK(got.get_uint("llama.rope.dimension_count") == 8);
  CHECK(got.get_uint("llama.context_length") == 512);
  CHECK(*got.opt_float("llama.rope.freq_base") == 10000.0);
  CHECK(std::fabs(*got.opt_float("llama.attention.layer_norm_rms_epsilon") - 1e-5) < 1e-9);
  CHECK(got.get_uint("general.file_type") == 0);
  CHECK(got.get_uint("tokenizer.ggml.bos_token_id") == 1);
  CHECK(got.get_uint("tokenizer.ggml.eos_token_id") == 2);
  CHECK(*got.opt_bool("tokenizer.ggml.add_bos_token"));
  // The vocabulary: same tokens and types as llama.cpp's file.
  const VocabData gv = read_gguf_vocab(got), rv = read_gguf_vocab(ref);
  CHECK(gv.model == "llama");
  CHECK(gv.tokens == rv.tokens);
  CHECK(gv.token_types == rv.token_types);
}

TEST_CASE("convert: HF F16 folder gives stories260K-f16.gguf's matrices, norms are the F16 values", "[convert]") {
  BRISK_TEST_FILE(dir, "models/stories260K-hf-f16");
  BRISK_TEST_FILE(ref_path, "models/stories260K-f16.gguf");
  gguf::File got(test::convert_hf_to(dir, "hf-f16.gguf"));
  gguf::File ref(ref_path);
  CHECK(got.get_uint("general.file_type") == 1);
  size_t matrices = 0, vectors = 0;
  for (const gguf::TensorInfo& t : got.tensors()) {
    INFO("tensor " << t.name);
    const gguf::TensorInfo* r = ref.find_tensor(t.name);
    REQUIRE(r);
    REQUIRE(t.type == r->type);
    CHECK(t.shape_string() == r->shape_string());
    if (t.n_dims == 2) {
      CHECK(t.type == TensorType::F16);
      CHECK(tensor_bytes(t) == tensor_bytes(*r));
      ++matrices;
    } else {
      // llama.cpp's F16 file kept the F32 originals of the norms; the HF F16
      // folder holds them rounded to F16, so the converted F32 value must be
      // exactly that rounding of llama.cpp's value.
      REQUIRE(t.type == TensorType::F32);
      const float* a = reinterpret_cast<const float*>(t.data);
      const float* b = reinterpret_cast<const float*>(r->data);
      for (int64_t i = 0; i < t.n_elements(); ++i) REQUIRE(a[i] == fp16_to_f32(f32_to_fp16(b[i])));
      ++vectors;
    }
  }
  CHECK(matrices == 36);
  CHECK(vectors == 11);
}

TEST_CASE("convert: HF BF16 folder runs and writes the same greedy text as stories260K.gguf", "[convert]") {
  BRISK_TEST_FILE(dir, "models/stories260K-hf-bf16");
  BRISK_TEST_FILE(ref_path, "models/stories260K.gguf");
  const std::string out = test::convert_hf_to(dir, "hf-bf16.gguf");
  {
    gguf::File got(out);
    CHECK(got.find_tensor("blk.0.attn_q.weight")->type == TensorType::BF16);
    CHECK(got.get_uint("general.file_type") == 32);
  }
  const std::string want = test::greedy_text(ref_path, 60);
  CHECK(want.size() > 100);
  CHECK(test::greedy_text(out, 60) == want);
}

TEST_CASE("convert: llama2.c checkpoint gives stories260K.gguf's tensors, vocabulary and text", "[convert]") {
  BRISK_TEST_FILE(bin, "models/stories260K.bin");
  BRISK_TEST_FILE(tok, "models/tok512.bin");
  BRISK_TEST_FILE(ref_path, "models/stories260K.gguf");
  const std::string out = (scratch_dir() / "l2c.gguf").string();
  brisk_convert_options o;
  brisk_convert_options_init(&o);
  const brisk_status st = brisk_convert_llama2c(bin.c_str(), tok.c_str(), out.c_str(), &o);
  INFO(brisk_last_error());
  REQUIRE(st == BRISK_OK);
  {
    gguf::File got(out), ref(ref_path);
    REQUIRE(got.tensors().size() == ref.tensors().size());
    for (size_t i = 0; i < got.tensors().size(); ++i) CHECK(got.tensors()[i].name == ref.tensors()[i].name);
    CHECK(expect_same_tensors(got, ref) == 48);
    const VocabData gv = read_gguf_vocab(got), rv = read_gguf_vocab(ref);
    CHECK(gv.tokens == rv.tokens);
    CHECK(gv.scores == rv.scores);
    CHECK(gv.token_types == rv.token_types);
    CHECK(gv.sep_id == rv.sep_id);
    CHECK(gv.pad_id == rv.pad_id);
    for (const char* k : {"llama.embedding_length", "llama.feed_forward_length", "llama.attention.head_count",
                          "llama.attention.head_count_kv", "llama.block_count", "llama.rope.dimension_count"})
      CHECK(got.get_uint(k) == ref.get_uint(k));
    CHECK(*got.opt_float("llama.attention.layer_norm_rms_epsilon") ==
          *ref.opt_float("llama.attention.layer_norm_rms_epsilon"));
  }
  CHECK(test::greedy_text(out, 80) == test::greedy_text(ref_path, 80));
}

TEST_CASE("convert: quantizing while converting equals llama-quantize (q8_0, q4_0, q4_1)", "[convert]") {
  BRISK_TEST_FILE(dir, "models/stories260K-hf-f32");
  const std::pair<int32_t, const char*> cases[] = {
      {BRISK_TYPE_Q8_0, "q8_0"}, {BRISK_TYPE_Q4_0, "q4_0"}, {BRISK_TYPE_Q4_1, "q4_1"}};
  for (const auto& [type, name] : cases) {
    BRISK_TEST_FILE(ref_path, std::string("models/stories260K-") + name + ".gguf");
    gguf::File got(test::convert_hf_to(dir, std::string("hf-") + name + ".gguf", type));
    gguf::File ref(ref_path);
    INFO(name);
    // ffn_down rows (172) do not fit 32-blocks: F16, as llama.cpp does.
    CHECK(got.find_tensor("blk.0.ffn_down.weight")->type == TensorType::F16);
    CHECK(expect_same_tensors(got, ref) == 47);
  }
}

TEST_CASE("convert: K-quants fall back to q8_0 or f16 when rows do not fit 256", "[convert]") {
  BRISK_TEST_FILE(dir, "models/stories260K-hf-f32");
  gguf::File got(test::convert_hf_to(dir, "hf-q4_k.gguf", BRISK_TYPE_Q4_K));
  CHECK(got.find_tensor("blk.0.attn_q.weight")->type == TensorType::Q8_0);   // 64 columns
  CHECK(got.find_tensor("blk.0.ffn_down.weight")->type == TensorType::F16);  // 172 columns
  CHECK(got.find_tensor("blk.0.attn_norm.weight")->type == TensorType::F32);
  CHECK(got.get_uint("general.file_type") == 14);
}

TEST_CASE("convert: logstories HF F16 to q4_k keeps q4_k where rows fit", "[convert]") {
  BRISK_TEST_FILE(dir, "models/logstories/logstories-hf-f16");
  gguf::File got(test::convert_hf_to(dir, "ls-q4_k.gguf", BRISK_TYPE_Q4_K));
  size_t q4k = 0;
  for (const gguf::TensorInfo& t : got.tensors()) q4k += t.type == TensorType::Q4_K;
  CHECK(q4k == 2 + 6 * 7);  // token_embd, output, 7 matrices per layer
}

TEST_CASE("convert: a sharded checkpoint converts to the same file as the unsharded one", "[convert]") {
  BRISK_TEST_FILE(dir, "models/stories260K-hf-f32");
  namespace fs = std::filesystem;
  const fs::path shard_dir = scratch_dir() / "sharded";
  fs::remove_all(shard_dir);
  fs::create_directories(shard_dir);
  for (const char* f : {"config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json"})
    fs::copy_file(fs::path(dir) / f, shard_dir / f);
  // Split model.safetensors: tensors alternate between two shards.
  const std::string src = test::read_bytes(dir + "/model.safetensors");
  uint64_t hlen;
  std::memcpy(&hlen, src.data(), 8);
  const nlohmann::json header = nlohmann::json::parse(src.substr(8, hlen));
  nlohmann::json shard_header[2] = {nlohmann::json::object(), nlohmann::json::object()}, weight_map;
  std::string shard_data[2];
  int k = 0;
  for (auto it = header.begin(); it != header.end(); ++it, ++k) {
    if (it.key() == "__metadata__") continue;
    const int s = k % 2;
    const uint64_t b = it.value()["data_offsets"][0], e = it.value()["data_offsets"][1];
    nlohmann::json entry = it.value();
    entry["data_offsets"] = {shard_data[s].size(), shard_data[s].size() + (e - b)};
    shard_data[s] += src.substr(8 + hlen + b, e - b);
    shard_header[s][it.key()] = entry;
    weight_map[it.key()] = "model-0000" + std::to_string(s + 1) + "-of-00002.safetensors";
  }
  for (int s = 0; s < 2; ++s) {
    const std::string h = shard_header[s].dump();
    std::string bytes(8, '\0');
    const uint64_t n = h.size();
    std::memcpy(bytes.data(), &n, 8);
    test::write_bytes((shard_dir / ("model-0000" + std::to_string(s + 1) + "-of-00002.safetensors")).string(),
                      bytes + h + shard_data[s]);
  }
  test::write_bytes((shard_dir / "model.safetensors.index.json").string(),
                    nlohmann::json{{"metadata", {{"total_size", src.size()}}}, {"weight_map", weight_map}}.dump());
  const std::string a = test::convert_hf_to(dir, "unsharded.gguf", BRISK_TYPE_AUTO, "stories260K");
  const std::string b = test::convert_hf_to(shard_dir.string(), "sharded.gguf", BRISK_TYPE_AUTO, "stories260K");
  CHECK(test::read_bytes(a).size() > 1000000);
  CHECK(test::read_bytes(a) == test::read_bytes(b));
}
