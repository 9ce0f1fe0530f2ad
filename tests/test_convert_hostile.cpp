// SPDX-License-Identifier: MIT
// Converter inputs from untrusted files: safetensors headers, config.json,
// index files and llama2.c checkpoints that are truncated, inconsistent or
// hand-crafted to lie. Each must fail with a clear error, never crash.
#include <catch2/catch.hpp>
#include <cstring>

#include "convert_util.h"
#include "converters/convert.h"
#include "converters/hf_config.h"
#include "converters/hf_files.h"
#include "converters/safetensors.h"
#include "core/error.h"

using namespace brisk;
using brisk::test::scratch_dir;

namespace {

std::string st_file(const std::string& header, const std::string& data, uint64_t claimed = UINT64_MAX) {
  std::string b(8, '\0');
  const uint64_t n = claimed == UINT64_MAX ? header.size() : claimed;
  std::memcpy(b.data(), &n, 8);
  return b + header + data;
}

void expect_st_error(const std::string& bytes, const std::string& needle) {
  INFO("expecting: " << needle);
  try {
    convert::parse_safetensors(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "x.safetensors");
    FAIL("parsed a bad safetensors image");
  } catch (const Error& e) {
    CHECK(e.code() == BRISK_ERR_BAD_FORMAT);
    CHECK_THAT(e.what(), Catch::Contains(needle));
  }
}

void expect_config_error(const std::string& json, const std::string& needle, brisk_status code = BRISK_ERR_BAD_FORMAT) {
  INFO(json);
  try {
    convert::parse_hf_config(json, "config.json");
    FAIL("accepted a bad config");
  } catch (const Error& e) {
    CHECK(e.code() == code);
    CHECK_THAT(e.what(), Catch::Contains(needle));
  }
}

const std::string kConfig =
    R"({"architectures":["LlamaForCausalLM"],"hidden_size":64,"intermediate_size":172,"num_hidden_layers":5,)"
    R"("num_attention_heads":8,"num_key_value_heads":4,"vocab_size":512,"rms_norm_eps":1e-5,"tie_word_embeddings":true)";

}  // namespace

TEST_CASE("safetensors: a valid image parses with exact ranges", "[convert]") {
  const std::string data(24, '\x01');
  const std::string h = R"({"__metadata__":{"format":"pt"},"b":{"dtype":"F16","shape":[2,2],"data_offsets":[16,24]},)"
                        R"("a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})";
  const std::string img = st_file(h, data);
  auto s = convert::parse_safetensors(reinterpret_cast<const uint8_t*>(img.data()), img.size(), "x");
  REQUIRE(s.tensors.size() == 2);
  CHECK(s.tensors[0].name == "a");  // sorted by offset
  CHECK(s.tensors[1].shape == std::vector<int64_t>{2, 2});
  CHECK(s.tensors[1].data == reinterpret_cast<const uint8_t*>(img.data()) + 8 + h.size() + 16);
  CHECK(s.metadata.at("format") == "pt");
}

TEST_CASE("safetensors: hostile headers are refused", "[convert]") {
  const std::string t = R"("t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::string data(8, '\0');
  expect_st_error("", "only 0 bytes");
  expect_st_error(st_file("{" + t + "}", data).substr(0, 5), "only 5 bytes");
  expect_st_error(st_file("{" + t + "}", data, 1000), "runs past the end");
  expect_st_error(st_file("{" + t + "}", data, 1ull << 40), "100 MiB");
  expect_st_error(st_file("{" + t + "}", data, UINT64_MAX - 3), "100 MiB");
  expect_st_error(st_file("{\"t\":", data), "not valid JSON");
  expect_st_error(st_file("[1,2,3]", data), "not a JSON object");
  expect_st_error(st_file(R"({"t":7})", data), "is not an object");
  expect_st_error(st_file(R"({"t":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}})", data), "unknown dtype");
  expect_st_error(st_file(R"({"t":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", data), "invalid dimension");
  expect_st_error(st_file(R"({"t":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", data), "invalid dimension");
  expect_st_error(st_file(R"({"t":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", data), "needs 3 x 4 bytes");
  expect_st_error(st_file(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})", data), "lies outside");
  expect_st_error(st_file(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", data), "lies outside");
  expect_st_error(st_file(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", data), "data_offsets");
  expect_st_error(st_file(R"({"t":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,8]}})", data),
                  "more elements");
  expect_st_error(st_file(R"({"t":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,4]}})", data),
                  "no shape");
  // A deeply nested header must not overflow the stack.
  expect_st_error(st_file(std::string(100000, '[') + std::string(100000, ']'), data), "nested too deeply");
}

TEST_CASE("config.json: values are checked", "[convert]") {
  convert::HfConfig c = convert::parse_hf_config(kConfig + "}", "config.json");
  CHECK(c.arch == "llama");
  CHECK(c.permute_qk);
  CHECK(c.head_dim == 8);
  CHECK(c.n_head_kv == 4);
  convert::HfConfig q = convert::parse_hf_config(
      R"({"architectures":["Qwen2ForCausalLM"],"hidden_size":896,"intermediate_size":4864,"num_hidden_layers":24,)"
      R"("num_attention_heads":14,"num_key_value_heads":2,"vocab_size":151936,"tie_word_embeddings":true,)"
      R"("rope_theta":1000000.0,"eos_token_id":[151645,151643]})",
      "config.json");
  CHECK(q.arch == "qwen2");
  CHECK_FALSE(q.permute_qk);
  CHECK(q.qkv_bias);
  CHECK(q.tied_embeddings);
  CHECK(*q.eos_id == 151645);
  expect_config_error("{", "not valid JSON");
  expect_config_error("[]", "not a JSON object");
  expect_config_error(R"({"hidden_size":64})", "'architectures' is missing");
  expect_config_error(R"({"architectures":["GPT2LMHeadModel"]})", "not supported", BRISK_ERR_UNSUPPORTED);
  expect_config_error(kConfig + R"(,"hidden_size":-64})", "out of range");
  expect_config_error(kConfig + R"(,"num_hidden_layers":"5"})", "not an integer");
  expect_config_error(kConfig + R"(,"num_key_value_heads":3})", "not a multiple");
  expect_config_error(kConfig + R"(,"rms_norm_eps":-1})", "out of range");
  expect_config_error(kConfig + R"(,"rope_scaling":{"type":"yarn","factor":4}})", "not supported",
                      BRISK_ERR_UNSUPPORTED);
  expect_config_error(kConfig + R"(,"attention_bias":true})", "not supported", BRISK_ERR_UNSUPPORTED);
  CHECK(*convert::parse_hf_config(kConfig + R"(,"rope_scaling":{"type":"linear","factor":2.0}})", "c")
             .rope_linear_factor == 2.0);
}

TEST_CASE("special tokens: tokenizer_config.json and generation_config.json fill the vocabulary", "[convert]") {
  VocabData v;
  v.tokens = {"<unk>", "<s>", "</s>", "<|im_end|>"};
  convert::apply_hf_special_tokens(
      v, std::string(R"({"add_bos_token":false,"eos_token":{"content":"<|im_end|>"},"chat_template":"{{x}}"})"),
      std::string(R"({"bos_token_id":1,"eos_token_id":[2,3]})"), std::nullopt, std::nullopt);
  CHECK(*v.add_bos == false);
  CHECK(*v.eos_id == 3);  // tokenizer_config first
  CHECK(*v.bos_id == 1);  // then generation_config
  CHECK(v.chat_template == "{{x}}");
  VocabData w;
  w.tokens = v.tokens;
  CHECK_THROWS_WITH(convert::apply_hf_special_tokens(w, std::string("{oops"), std::nullopt, 7, 1),
                    Catch::Contains("tokenizer_config.json"));
}

TEST_CASE("convert: broken model directories give clear errors and no output", "[convert]") {
  BRISK_TEST_FILE(dir, "models/stories260K-hf-f32");
  namespace fs = std::filesystem;
  const fs::path d = scratch_dir() / "broken-hf";
  const std::string out = (scratch_dir() / "broken.gguf").string();
  auto reset = [&] {
    fs::remove_all(d);
    fs::create_directories(d);
    for (const char* f : {"config.json", "tokenizer.json", "tokenizer_config.json", "model.safetensors"})
      fs::copy_file(fs::path(dir) / f, d / f);
  };
  auto expect = [&](brisk_status code, const std::string& needle) {
    brisk_convert_options o;
    brisk_convert_options_init(&o);
    CHECK(brisk_convert_hf(d.string().c_str(), out.c_str(), &o) == code);
    CHECK_THAT(brisk_last_error(), Catch::Contains(needle));
    CHECK_FALSE(fs::exists(out));
  };
  reset();
  fs::remove(d / "config.json");
  expect(BRISK_ERR_NOT_FOUND, "no config.json");
  reset();
  fs::remove(d / "tokenizer.json");
  expect(BRISK_ERR_NOT_FOUND, "no tokenizer.json");
  reset();
  const std::string st = test::read_bytes((d / "model.safetensors").string());
  test::write_bytes((d / "model.safetensors").string(), st.substr(0, st.size() - 100));
  expect(BRISK_ERR_BAD_FORMAT, "lies outside");
  reset();
  test::write_bytes((d / "config.json").string(), kConfig + R"(,"num_hidden_layers":6})");
  expect(BRISK_ERR_BAD_FORMAT, "model.layers.5.input_layernorm.weight' is missing");
  reset();
  test::write_bytes((d / "config.json").string(), kConfig + R"(,"num_hidden_layers":4})");
  expect(BRISK_ERR_UNSUPPORTED, "model.layers.4");
  reset();
  test::write_bytes((d / "config.json").string(), kConfig + R"(,"hidden_size":128,"num_attention_heads":16})");
  expect(BRISK_ERR_BAD_FORMAT, "has shape [512, 64]");
  reset();
  fs::remove(d / "model.safetensors");
  test::write_bytes((d / "model.safetensors.index.json").string(),
                    R"({"weight_map":{"model.norm.weight":"../../etc/passwd"}})");
  expect(BRISK_ERR_BAD_FORMAT, "invalid file name");
  test::write_bytes((d / "model.safetensors.index.json").string(), R"({"weight_map":{"model.norm.weight":"nope.safetensors"}})");
  expect(BRISK_ERR_NOT_FOUND, "nope.safetensors");
  fs::remove(d / "model.safetensors.index.json");
  expect(BRISK_ERR_NOT_FOUND, "no model.safetensors");
}

TEST_CASE("convert: broken llama2.c checkpoints give clear errors", "[convert]") {
  BRISK_TEST_FILE(bin, "models/stories260K.bin");
  BRISK_TEST_FILE(tok, "models/tok512.bin");
  const std::string good = test::read_bytes(bin), good_tok = test::read_bytes(tok);
  const std::string b = (scratch_dir() / "l2c-bad.bin").string(), t = (scratch_dir() / "l2c-bad-tok.bin").string();
  const std::string out = (scratch_dir() / "l2c-bad.gguf").string();
  auto expect = [&](const std::string& model, const std::string& tokb, brisk_status code, const std::string& needle) {
    test::write_bytes(b, model);
    test::write_bytes(t, tokb);
    brisk_convert_options o;
    brisk_convert_options_init(&o);
    CHECK(brisk_convert_llama2c(b.c_str(), t.c_str(), out.c_str(), &o) == code);
    CHECK_THAT(brisk_last_error(), Catch::Contains(needle));
    CHECK_FALSE(std::filesystem::exists(out));
  };
  expect(good.substr(0, 20), good_tok, BRISK_ERR_BAD_FORMAT, "too short");
  expect(good.substr(0, good.size() - 4), good_tok, BRISK_ERR_BAD_FORMAT, "needs 1056540");
  std::string huge = good;
  const int32_t big = 1 << 24;
  for (int i : {0, 1, 2}) std::memcpy(huge.data() + 4 * i, &big, 4);
  expect(huge, good_tok, BRISK_ERR_BAD_FORMAT, "impossibly large");
  std::string neg = good;
  const int32_t minus = -5;
  std::memcpy(neg.data() + 8, &minus, 4);
  expect(neg, good_tok, BRISK_ERR_BAD_FORMAT, "out of range");
  expect(good, good_tok.substr(0, 3000), BRISK_ERR_BAD_FORMAT, "truncated at token");
  std::string badlen = good_tok;
  const int32_t len = 1 << 30;
  std::memcpy(badlen.data() + 4 + 4, &len, 4);
  expect(good, badlen, BRISK_ERR_BAD_FORMAT, "past the end");
  expect(std::string("ak42") + good.substr(4), good_tok, BRISK_ERR_UNSUPPORTED, "version-0");
}
