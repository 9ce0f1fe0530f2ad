// Byte-level BPE parity with llama.cpp on its vocab test files.
#include <catch2/catch.hpp>

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
