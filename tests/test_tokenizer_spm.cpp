// SPDX-License-Identifier: MIT
// SentencePiece-style tokenizer parity with llama.cpp, and Utf8Stream.
#include <catch2/catch.hpp>

#include "core/error.h"
#include "test_data.h"
#include "tokenizer_util.h"

using namespace brisk;
using namespace brisk::test;

namespace {

// Runs one llama.cpp vocab test triple; returns the number of strings that match.
size_t run_vocab_file(const std::string& gguf_path, size_t* n_cases) {
  gguf::File f(gguf_path);
  auto tok = Tokenizer::from_gguf(f);
  auto cases = read_vocab_cases(gguf_path + ".inp", gguf_path + ".out");
  *n_cases = cases.size();
  size_t ok = 0;
  for (const auto& c : cases) {
    auto ids = tok->encode(c.text, false, false);
    if (ids == c.ids) {
      ++ok;
    } else {
      UNSCOPED_INFO("mismatch for [" << c.text << "]\n  want" << ids_string(c.ids) << "\n  got " << ids_string(ids));
    }
  }
  return ok;
}

}  // namespace

TEST_CASE("SPM tokenizer matches llama.cpp on ggml-vocab-llama-spm", "[tokenizer]") {
  BRISK_TEST_FILE(path, "models/llama-vocab-tests/ggml-vocab-llama-spm.gguf");
  size_t n = 0;
  size_t ok = run_vocab_file(path, &n);
  CHECK(n == 46);
  CHECK(ok == n);
}

TEST_CASE("SPM tokenizer: stories260K metadata and round trip", "[tokenizer]") {
  BRISK_TEST_FILE(path, "models/stories260K.gguf");
  gguf::File f(path);
  auto tok = Tokenizer::from_gguf(f);
  CHECK(tok->n_vocab() == 512);
  CHECK(tok->bos() == 1);
  CHECK(tok->eos() == 2);
  CHECK(tok->adds_bos());
  CHECK(tok->adds_space_prefix());
  CHECK(tok->is_eog(2));
  CHECK_FALSE(tok->is_eog(1));

  const std::string text = "Once upon a time";
  auto ids = tok->encode(text, true, false);
  REQUIRE(ids.size() >= 2);
  CHECK(ids[0] == 1);
  CHECK(tok->decode(ids.data(), ids.size(), true) == text);
  CHECK(tok->decode(ids.data(), ids.size(), false) == " " + text);
  CHECK(tok->token_to_piece(1) == "");
  CHECK(tok->token_to_piece(1, true) == "<s>");

  // Without BOS the text is the same; only the dummy prefix differs.
  auto ids2 = tok->encode(text, false, false);
  CHECK(std::vector<int32_t>(ids.begin() + 1, ids.end()) == ids2);

  // Characters outside the 512-token vocabulary fall back to bytes.
  const std::string odd = "Ünïcödé ☃ \x01\xff";
  auto ids3 = tok->encode(odd, false, false);
  CHECK(tok->decode(ids3.data(), ids3.size(), true) == odd);

  // Special tokens: only recognised with parse_special.
  auto plain = tok->encode("<s>hi", false, false);
  CHECK(std::find(plain.begin(), plain.end(), 1) == plain.end());
  auto special = tok->encode("<s>hi", false, true);
  REQUIRE(!special.empty());
  CHECK(special[0] == 1);

  CHECK(tok->encode("", false, false).empty());
  CHECK(tok->encode("", true, false) == std::vector<int32_t>{1});
  // Invalid ids decode to nothing rather than crashing.
  const int32_t bad[] = {-5, 100000, 1, 2};
  CHECK(tok->decode(bad, 4, true).empty());
}

TEST_CASE("Utf8Stream holds back split characters and replaces invalid bytes", "[tokenizer]") {
  Utf8Stream s;
  // "é" (C3 A9) split across two pushes.
  CHECK(s.push("caf\xC3") == "caf");
  CHECK(s.push("\xA9!") == "\xC3\xA9!");
  // A 4-byte emoji one byte at a time.
  const std::string emoji = "\xF0\x9F\x98\x80";
  std::string got;
  for (char c : emoji) got += s.push(std::string(1, c));
  CHECK(got == emoji);
  // Invalid bytes become U+FFFD, never raw bytes.
  CHECK(s.push("a\xFF" "b") == "a\xEF\xBF\xBD" "b");
  CHECK(s.push("\x80") == "\xEF\xBF\xBD");
  // A lead byte followed by a non-continuation: one U+FFFD, then the char.
  CHECK(s.push("\xE2(") == "\xEF\xBF\xBD(");
  // Overlong and surrogate encodings are invalid.
  CHECK(s.push("\xC0\xAF") == "\xEF\xBF\xBD\xEF\xBF\xBD");
  CHECK(s.push("\xED\xA0\x80") == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  // Incomplete at the end: flush gives one U+FFFD.
  CHECK(s.push("x\xE2\x82") == "x");
  CHECK(s.flush() == "\xEF\xBF\xBD");
  CHECK(s.flush().empty());
}

TEST_CASE("Utf8Stream over token pieces yields the decoded text", "[tokenizer]") {
  BRISK_TEST_FILE(path, "models/llama-vocab-tests/ggml-vocab-llama-spm.gguf");
  gguf::File f(path);
  auto tok = Tokenizer::from_gguf(f);
  const std::string text = "Привет, 世界! 🦙 emoji and ½";
  auto ids = tok->encode(text, false, false);
  Utf8Stream s;
  std::string streamed;
  for (int32_t id : ids) {
    std::string part = s.push(tok->token_to_piece(id));
    // Every chunk handed out is valid UTF-8 on its own.
    Utf8Stream check;
    CHECK(check.push(part) == part);
    streamed += part;
  }
  streamed += s.flush();
  CHECK(streamed == " " + text);
}

TEST_CASE("SPM tokenizer matches llama.cpp on ggml-vocab-phi-3", "[tokenizer]") {
  BRISK_TEST_FILE(path, "models/vocab-tests/ggml-vocab-phi-3.gguf");
  size_t n = 0;
  size_t ok = run_vocab_file(path, &n);
  CHECK(n == 46);
  CHECK(ok == n);
}
