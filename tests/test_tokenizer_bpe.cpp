// SPDX-License-Identifier: MIT
// Byte-level BPE parity with llama.cpp on its vocab test files.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "test_data.h"
#include "tokenizer_util.h"

using namespace brisk;
using namespace brisk::test;

namespace {

size_t run_vocab(const std::string& gguf_path, size_t* n_cases) {
  gguf::File f(gguf_path);
  auto tok = Tokenizer::from_gguf(f);
  auto cases = read_vocab_cases(gguf_path + ".inp", gguf_path + ".out");
  *n_cases = cases.size();
  size_t ok = 0;
  for (const auto& c : cases) {
    auto ids = tok->encode(c.text, false, false);
    if (ids == c.ids)
      ++ok;
    else
      UNSCOPED_INFO("mismatch for [" << c.text << "]\n  want" << ids_string(c.ids) << "\n  got " << ids_string(ids));
  }
  return ok;
}

}  // namespace

TEST_CASE("BPE tokenizers match llama.cpp on every vocab test file", "[tokenizer]") {
  for (const char* name : {"gpt-2", "llama-bpe", "qwen2", "deepseek-llm", "deepseek-coder"}) {
    BRISK_TEST_FILE(path, std::string("models/vocab-tests/ggml-vocab-") + name + ".gguf");
    size_t n = 0;
    size_t ok = run_vocab(path, &n);
    INFO(name << ": " << ok << "/" << n);
    CHECK(n == 46);
    CHECK(ok == n);
  }
}

namespace {
std::string unhex(const std::string& h) {
  std::string s;
  for (size_t i = 0; i + 1 < h.size(); i += 2) s += static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16));
  return s;
}
}  // namespace

// tests/data/tokenizer_parity.json holds llama.cpp's own ids (libllama, see
// make_tokenizer_parity.py) for strings built to stress pre-tokenization:
// unusual whitespace, unassigned code points, special-token text, invalid UTF-8.
TEST_CASE("Tokenizers match libllama on hard inputs", "[tokenizer]") {
  const auto json_path = std::filesystem::path(BRISK_TESTS_DIR) / "data" / "tokenizer_parity.json";
  REQUIRE(std::filesystem::exists(json_path));
  const auto ref = nlohmann::json::parse(read_all(json_path.string()));
  std::vector<std::string> cases;
  for (const auto& h : ref["cases"]) cases.push_back(unhex(h.get<std::string>()));
  for (const auto& [name, per_case] : ref["plain"].items()) {
    const std::string dir = name == "ggml-vocab-llama-spm" ? "models/llama-vocab-tests/" : "models/vocab-tests/";
    BRISK_TEST_FILE(path, dir + name + ".gguf");
    gguf::File f(path);
    auto tok = Tokenizer::from_gguf(f);
    const auto& special = ref["parse_special"][name];
    size_t ok = 0, ok_special = 0;
    for (size_t i = 0; i < cases.size(); ++i) {
      const auto want = per_case[i].get<std::vector<int32_t>>();
      if (tok->encode(cases[i], false, false) == want) ++ok;
      const auto it = special.find(std::to_string(i));
      const auto want_s = it != special.end() ? it->get<std::vector<int32_t>>() : want;
      if (tok->encode(cases[i], false, true) == want_s) ++ok_special;
    }
    INFO(name);
    CHECK(ok == cases.size());
    CHECK(ok_special == cases.size());
  }
}
