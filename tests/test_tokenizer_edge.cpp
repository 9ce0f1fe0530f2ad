// SPDX-License-Identifier: MIT
// Special tokens, end-of-generation, and inputs that must never break the
// tokenizer: invalid UTF-8, empty text, huge lines, broken vocabularies.
#include <catch2/catch.hpp>
#include <atomic>
#include <ctime>
#include <thread>
#include <random>

#include "core/error.h"
#include "test_data.h"
#include "tokenizer_util.h"

using namespace brisk;
using namespace brisk::test;

namespace {

std::unique_ptr<Tokenizer> load(const std::string& path) {
  gguf::File f(path);
  return Tokenizer::from_gguf(f);
}

bool contains(const std::vector<int32_t>& v, int32_t id) { return std::find(v.begin(), v.end(), id) != v.end(); }

double cpu_seconds_since(std::clock_t t0) { return static_cast<double>(std::clock() - t0) / CLOCKS_PER_SEC; }

}  // namespace

TEST_CASE("Llama 3 special tokens, BOS and end of generation", "[tokenizer]") {
  BRISK_TEST_FILE(path, "models/vocab-tests/ggml-vocab-llama-bpe.gguf");
  auto tok = load(path);
  CHECK(tok->bos() == 128000);
  CHECK(tok->eos() == 128001);
  CHECK(tok->eot() == 128009);
  CHECK(tok->adds_bos());  // add_bos_token = true
  CHECK_FALSE(tok->adds_space_prefix());
  CHECK(tok->is_eog(128001));
  CHECK(tok->is_eog(128009));
  CHECK_FALSE(tok->is_eog(128006));
  CHECK_FALSE(tok->is_eog(-1));
  CHECK(tok->token_type(128009) == TokenType::CONTROL);
  CHECK(tok->find_token("<|eot_id|>") == 128009);

  const std::string chat = "<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>";
  auto ids = tok->encode(chat, false, true);
  REQUIRE(ids.size() >= 4);
  CHECK(ids.front() == 128006);
  CHECK(contains(ids, 128007));
  CHECK(ids.back() == 128009);
  // Without parse_special the markers are plain text.
  auto plain = tok->encode(chat, false, false);
  for (int32_t id : plain) CHECK(id < 128000);
  CHECK(tok->decode(plain.data(), plain.size(), false) == chat);
  // Control tokens render only on request.
  CHECK(tok->token_to_piece(128009).empty());
  CHECK(tok->token_to_piece(128009, true) == "<|eot_id|>");
  CHECK(tok->decode(ids.data(), ids.size(), false) == "user\n\nHi!");

  auto with_bos = tok->encode("Hello", true, false);
  REQUIRE(with_bos.size() == 2);
  CHECK(with_bos[0] == 128000);

  // Round trip of valid UTF-8 through byte-level BPE is exact.
  const std::string text = "Grüße, мир! 你好 🦙\t\n  x = [1, 2]; // ok\r\n";
  auto t = tok->encode(text, false, false);
  CHECK(tok->decode(t.data(), t.size(), false) == text);
}

TEST_CASE("Qwen2 and DeepSeek special tokens", "[tokenizer]") {
  {
    BRISK_TEST_FILE(path, "models/vocab-tests/ggml-vocab-qwen2.gguf");
    auto tok = load(path);
    CHECK(tok->eos() == 151645);
    CHECK_FALSE(tok->adds_bos());  // no add_bos key, qwen2 default
    CHECK(tok->is_eog(151645));    // <|im_end|>
    CHECK(tok->is_eog(151643));    // <|endoftext|>
    CHECK_FALSE(tok->is_eog(151644));
    auto ids = tok->encode("<|im_start|>user\nhi<|im_end|>\n", true, true);
    REQUIRE(!ids.empty());
    CHECK(ids.front() == 151644);
    CHECK(contains(ids, 151645));
    // Unused padding tokens render as nothing.
    CHECK(tok->token_to_piece(151700, true).empty());
  }
  {
    BRISK_TEST_FILE(path, "models/vocab-tests/ggml-vocab-deepseek-coder.gguf");
    auto tok = load(path);
    // User-defined tokens are split out even without parse_special.
    auto ids = tok->encode("a\xC3\xB5" "b", false, false);  // "aõb"; õ is user-defined 32000
    CHECK(contains(ids, 32000));
    CHECK(tok->decode(ids.data(), ids.size(), false) == "a\xC3\xB5" "b");
    // The BOS control token only with parse_special.
    const std::string bos_text = tok->token_text(32013).data();
    CHECK_FALSE(contains(tok->encode(bos_text + "x", false, false), 32013));
    CHECK(tok->encode(bos_text + "x", false, true).front() == 32013);
  }
}

TEST_CASE("Invalid UTF-8 and empty input", "[tokenizer]") {
  for (const char* rel : {"models/llama-vocab-tests/ggml-vocab-llama-spm.gguf", "models/vocab-tests/ggml-vocab-gpt-2.gguf",
                          "models/vocab-tests/ggml-vocab-llama-bpe.gguf", "models/vocab-tests/ggml-vocab-qwen2.gguf",
                          "models/vocab-tests/ggml-vocab-deepseek-llm.gguf"}) {
    BRISK_TEST_FILE(path, rel);
    auto tok = load(path);
    INFO(rel);
    CHECK(tok->encode("", false, false).empty());
    CHECK(tok->encode("", false, true).empty());
    auto e = tok->encode("", true, false);
    CHECK(e.size() == (tok->adds_bos() ? 1u : 0u));
    CHECK(tok->decode(nullptr, 0, true).empty());

    const std::string bad = "ok \xFF\xFE mid \xE2\x82 end \xC0\xAF \xED\xA0\x80 \xF4\x90\x80\x80 \x80";
    auto ids = tok->encode(bad, false, true);
    CHECK(!ids.empty());
    for (int32_t id : ids) CHECK((id >= 0 && id < tok->n_vocab()));
    std::string back = tok->decode(ids.data(), ids.size(), true);
    if (tok->adds_space_prefix()) {
      // SPM keeps the bytes through <0xNN> tokens. (llama.cpp splits symbols
      // by lead byte, so an invalid lead swallows up to 3 following bytes; a
      // swallowed space comes back as U+2581, hence no spaces right after.)
      const std::string sp = "ok \xFF" "abc mid \x80" "def \xE2\x82" "xyz \xC0\xAF" "end";
      auto t = tok->encode(sp, false, false);
      CHECK(tok->decode(t.data(), t.size(), true) == sp);
    } else {
      // Byte-level BPE decodes as llama.cpp does: each ill-formed lead byte
      // is one U+FFFD, overlong forms are accepted (C0 AF is '/').
      CHECK(back == "ok \xEF\xBF\xBD\xEF\xBF\xBD mid \xEF\xBF\xBD\xEF\xBF\xBD end / \xEF\xBF\xBD \xEF\xBF\xBD \xEF\xBF\xBD");
    }
    // Random bytes: never a crash, ids always in range, decode never fails.
    std::mt19937 rng(1234);
    for (int i = 0; i < 200; ++i) {
      std::string s(rng() % 64, '\0');
      for (char& c : s) c = static_cast<char>(rng() & 0xFF);
      auto r = tok->encode(s, true, true);
      for (int32_t id : r) REQUIRE((id >= 0 && id < tok->n_vocab()));
      (void)tok->decode(r.data(), r.size(), true);
    }
  }
}

TEST_CASE("A 10 MB line and one huge pre-token stay fast", "[tokenizer]") {
  BRISK_TEST_FILE(text_path, "data/wikitext-2-raw-test.txt");
  std::string line;
  {
    auto lines = read_lines(text_path, 100000);
    for (size_t i = 0; line.size() < 10u * 1000 * 1000; i = (i + 1) % lines.size()) {
      line += lines[i];
      line += ' ';
    }
  }
  for (const char* rel : {"models/vocab-tests/ggml-vocab-llama-bpe.gguf", "models/llama-vocab-tests/ggml-vocab-llama-spm.gguf"}) {
    BRISK_TEST_FILE(path, rel);
    auto tok = load(path);
    INFO(rel);
    std::clock_t t0 = std::clock();
    auto ids = tok->encode(line, false, false);
    const double s = cpu_seconds_since(t0);
    WARN(rel << ": 10 MB line in " << s << " s CPU, " << ids.size() << " tokens");
    CHECK(s < 2.0);
    CHECK(tok->decode(ids.data(), ids.size(), true) == line);

    // 1 MB without any break: one pre-token (BPE) / one word (SPM).
    const std::string blob(1000 * 1000, 'a');
    t0 = std::clock();
    auto b = tok->encode(blob, false, false);
    const double s2 = cpu_seconds_since(t0);
    WARN(rel << ": 1 MB single word in " << s2 << " s CPU, " << b.size() << " tokens");
    CHECK(s2 < 2.0);
    CHECK(tok->decode(b.data(), b.size(), true) == blob);
  }
}

TEST_CASE("Broken vocabularies give defined results or clear errors", "[tokenizer]") {
  VocabData d;
  d.model = "gpt2";
  d.pre = "gpt-2";
  d.tokens = {"a", "b", "c", "ab", "abc", "x"};
  // "a b" is missing although "ab" is a token; "b c" produces a non-token;
  // "q r" names strings that are not in the vocabulary at all.
  d.merges = {"ab c", "b c", "q r", "nospace"};
  auto tok = Tokenizer::from_vocab(d);
  CHECK(tok->encode("abc", false, false) == std::vector<int32_t>{0, 1, 2});
  CHECK(tok->encode("bc", false, false) == std::vector<int32_t>{1, 2});
  CHECK(tok->encode("qr", false, false).empty());  // no token for q or r: dropped, as llama.cpp
  d.merges = {"a b", "ab c"};
  tok = Tokenizer::from_vocab(d);
  CHECK(tok->encode("abc", false, false) == std::vector<int32_t>{4});
  CHECK(tok->bos() == -1);
  CHECK_FALSE(tok->adds_bos());

  // SPM without byte tokens: unknown characters become <unk>.
  VocabData s;
  s.model = "llama";
  s.tokens = {"<unk>", "<s>", "</s>", "\xE2\x96\x81" "a", "\xE2\x96\x81", "a"};
  s.token_types = {2, 3, 3, 1, 1, 1};
  s.scores = {0, 0, 0, -1, -2, -3};
  auto spm = Tokenizer::from_vocab(s);
  CHECK(spm->encode("a", true, false) == std::vector<int32_t>{1, 3});
  CHECK(spm->encode("a\xC3\xA9", false, false) == std::vector<int32_t>{3, 0, 0});

  auto code_of = [](auto fn) {
    try {
      fn();
    } catch (const Error& e) {
      return e.code();
    }
    return BRISK_OK;
  };
  VocabData bad = d;
  bad.pre = "no-such-pre";
  CHECK(code_of([&] { Tokenizer::from_vocab(bad); }) == BRISK_ERR_UNSUPPORTED);
  bad = d;
  bad.model = "t5";
  CHECK(code_of([&] { Tokenizer::from_vocab(bad); }) == BRISK_ERR_UNSUPPORTED);
  bad = d;
  bad.tokens.clear();
  CHECK(code_of([&] { Tokenizer::from_vocab(bad); }) == BRISK_ERR_BAD_FORMAT);
  bad = d;
  bad.merges.clear();
  CHECK(code_of([&] { Tokenizer::from_vocab(bad); }) == BRISK_ERR_BAD_FORMAT);
  bad = s;
  bad.scores.resize(2);
  CHECK(code_of([&] { Tokenizer::from_vocab(bad); }) == BRISK_ERR_BAD_FORMAT);
}

TEST_CASE("A tokenizer is safe to share between threads", "[tokenizer]") {
  BRISK_TEST_FILE(path, "models/vocab-tests/ggml-vocab-qwen2.gguf");
  BRISK_TEST_FILE(text_path, "data/tinyshakespeare.txt");
  auto tok = load(path);
  const auto lines = read_lines(text_path, 2000);
  std::vector<std::vector<int32_t>> expected;
  for (const auto& l : lines) expected.push_back(tok->encode(l, true, true));
  std::atomic<int> bad{0};
  auto work = [&] {
    for (size_t i = 0; i < lines.size(); ++i)
      if (tok->encode(lines[i], true, true) != expected[i]) ++bad;
  };
  std::thread a(work), b(work);
  a.join();
  b.join();
  CHECK(bad == 0);
}
