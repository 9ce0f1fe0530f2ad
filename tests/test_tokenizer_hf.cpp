// SPDX-License-Identifier: MIT
// Tokenizers built from Hugging Face tokenizer.json agree with the GGUF ones.
#include <catch2/catch.hpp>

#include "core/error.h"
#include "test_data.h"
#include "tokenizer_util.h"

using namespace brisk;
using namespace brisk::test;

namespace {

// Compares two tokenizers line by line; returns the number of equal lines.
size_t compare_lines(const Tokenizer& a, const Tokenizer& b, const std::vector<std::string>& lines) {
  size_t same = 0;
  for (const auto& line : lines) {
    auto x = a.encode(line, true, false);
    auto y = b.encode(line, true, false);
    if (x == y)
      ++same;
    else
      UNSCOPED_INFO("differs on [" << line << "]\n  a" << ids_string(x) << "\n  b" << ids_string(y));
  }
  return same;
}

}  // namespace

TEST_CASE("HF tokenizer.json of stories260K gives the GGUF's ids", "[tokenizer]") {
  BRISK_TEST_FILE(json_path, "models/stories260K-hf-f32/tokenizer.json");
  BRISK_TEST_FILE(gguf_path, "models/stories260K.gguf");
  BRISK_TEST_FILE(stories, "data/tinystories-valid-head.txt");
  BRISK_TEST_FILE(wiki, "data/wikitext-2-raw-test.txt");
  gguf::File f(gguf_path);
  auto g = Tokenizer::from_gguf(f);
  auto h = Tokenizer::from_hf_json(json_path);
  CHECK(h->n_vocab() == 512);
  CHECK(h->bos() == 1);
  CHECK(h->eos() == 2);
  CHECK(h->adds_bos());
  CHECK(h->adds_space_prefix());
  // The converter's view of the same file builds an SPM tokenizer too.
  VocabData vd = load_hf_vocab(json_path);
  CHECK(vd.model == "llama");
  CHECK(vd.tokens.size() == 512);
  CHECK(vd.token_types[0] == static_cast<int32_t>(TokenType::UNKNOWN));
  CHECK(vd.token_types[1] == static_cast<int32_t>(TokenType::CONTROL));
  CHECK(vd.token_types[3] == static_cast<int32_t>(TokenType::BYTE));
  CHECK(vd.add_bos == std::optional<bool>(true));
  auto c = Tokenizer::from_vocab(vd);

  for (const std::string& path : {stories, wiki}) {
    auto lines = read_lines(path, 400);
    REQUIRE(lines.size() >= 300);
    INFO(path);
    CHECK(compare_lines(*g, *h, lines) == lines.size());
    CHECK(compare_lines(*g, *c, lines) == lines.size());
  }
  auto ids = h->encode("Once upon a time", true, false);
  CHECK(h->decode(ids.data(), ids.size(), true) == "Once upon a time");
}

TEST_CASE("HF tokenizer.json of logstories gives the GGUF's ids", "[tokenizer]") {
  BRISK_TEST_FILE(json_path, "models/logstories/logstories-hf-f16/tokenizer.json");
  BRISK_TEST_FILE(gguf_path, "models/logstories/logstories-f16.gguf");
  BRISK_TEST_FILE(logs, "data/splits/logs-heldout.txt");
  gguf::File f(gguf_path);
  auto g = Tokenizer::from_gguf(f);
  auto h = Tokenizer::from_hf_json(json_path);
  auto c = Tokenizer::from_vocab(load_hf_vocab(json_path));
  auto lines = read_lines(logs, 400);
  REQUIRE(lines.size() >= 300);
  CHECK(compare_lines(*g, *h, lines) == lines.size());
  CHECK(compare_lines(*g, *c, lines) == lines.size());
}

namespace {

// A small byte-level BPE tokenizer.json in the Llama 3 layout.
std::string byte_level_json(bool array_merges) {
  const char* merges_str = R"(["Ġ t", "h e", "Ġt he", "l l", "e ll", "ell o", "h ello"])";
  const char* merges_arr = R"([["Ġ","t"],["h","e"],["Ġt","he"],["l","l"],["e","ll"],["ell","o"],["h","ello"]])";
  // Built with append only (GCC 12 warns falsely on "literal" + std::string).
  std::string vocab = "{";
  int id = 0;
  auto entry = [&](const std::string& t) {
    vocab.append("\"").append(t).append("\": ").append(std::to_string(id++)).append(", ");
  };
  for (const char* p = "abcdefghijklmnopqrstuvwxyz!,.?'"; *p; ++p) entry(std::string(1, *p));
  for (const char* t : {"Ġ", "Ċ", "Ġt", "he", "Ġthe", "ll", "ell", "ello", "hello"}) entry(t);
  vocab.append("\"ĠĠ\": ").append(std::to_string(id++)).append("}");
  const std::string regex =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+)";
  return std::string(R"({"version": "1.0", "added_tokens": [
      {"id": 100, "content": "<|begin_of_text|>", "special": true},
      {"id": 101, "content": "<|eot_id|>", "special": true},
      {"id": 102, "content": "<tool>", "special": false}],
    "normalizer": null,
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": ")") + regex + R"("}, "behavior": "Isolated", "invert": false},
      {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]},
    "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}]},
    "decoder": {"type": "ByteLevel"},
    "model": {"type": "BPE", "dropout": null, "unk_token": null, "fuse_unk": false, "byte_fallback": false,
              "ignore_merges": true, "vocab": )" + vocab + R"(, "merges": )" + (array_merges ? merges_arr : merges_str) + "}}";
}

}  // namespace

TEST_CASE("HF byte-level BPE from JSON text: merges in both forms, added tokens", "[tokenizer]") {
  for (bool arr : {false, true}) {
    auto t = Tokenizer::from_hf_json(byte_level_json(arr));
    INFO("array merges: " << arr);
    CHECK(t->n_vocab() == 103);  // ids 41..99 are holes, padded
    CHECK(t->bos() == 100);
    CHECK(t->adds_bos());
    CHECK(t->eot() == 101);
    CHECK(t->is_eog(101));
    const int32_t the = t->find_token("Ġthe"), hello = t->find_token("hello");
    auto ids = t->encode("hello the", true, false);
    CHECK(ids == std::vector<int32_t>{100, hello, the});
    CHECK(t->decode(ids.data(), ids.size(), false) == "hello the");
    // Added tokens: the user-defined one always, the special one only with parse_special.
    auto a = t->encode("hello<tool><|eot_id|>", false, false);
    CHECK(std::find(a.begin(), a.end(), 102) != a.end());
    CHECK(std::find(a.begin(), a.end(), 101) == a.end());
    auto b = t->encode("hello<tool><|eot_id|>", false, true);
    CHECK(b.back() == 101);

    VocabData vd = load_hf_vocab(byte_level_json(arr));
    CHECK(vd.model == "gpt2");
    CHECK(vd.pre == "llama-bpe");
    CHECK(vd.merges.size() == 7);
    CHECK(vd.merges[0] == "Ġ t");
    CHECK(vd.token_types[100] == static_cast<int32_t>(TokenType::CONTROL));
    CHECK(vd.token_types[102] == static_cast<int32_t>(TokenType::USER_DEFINED));
    CHECK(vd.token_types[50] == static_cast<int32_t>(TokenType::UNUSED));
    // The GGUF-style tokenizer built from the converter's data agrees.
    auto g = Tokenizer::from_vocab(vd);
    CHECK(g->encode("hello the", true, false) == ids);
  }
}

TEST_CASE("HF loader errors are clear", "[tokenizer]") {
  auto code_of = [](const std::string& text) {
    try {
      Tokenizer::from_hf_json(text);
    } catch (const Error& e) {
      return e.code();
    }
    return BRISK_OK;
  };
  CHECK(code_of(R"({"model": {"type": "WordPiece", "vocab": {"a": 0}}})") == BRISK_ERR_UNSUPPORTED);
  CHECK(code_of(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a b"]}})") == BRISK_ERR_BAD_FORMAT);
  CHECK(code_of("{not json") == BRISK_ERR_BAD_FORMAT);
  CHECK(code_of(R"({"model": 5})") == BRISK_ERR_BAD_FORMAT);
  CHECK(code_of(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": 7, "added_tokens": 3}})") == BRISK_ERR_BAD_FORMAT);
  CHECK(code_of(R"({"model": {"vocab": {"a": 0}, "merges": []}, "added_tokens": [{"id": 1, "content": 2}]})") ==
        BRISK_ERR_BAD_FORMAT);
  CHECK(code_of("/no/such/tokenizer.json") == BRISK_ERR_NOT_FOUND);
}
