// SPDX-License-Identifier: MIT
// The tokenizer's encode path on real vocabularies: arbitrary bytes (mostly
// invalid UTF-8) are encoded, the ids decoded back in one go and streamed
// token by token as the engine streams generated text (generated_piece +
// Utf8Stream), and invariants that must always hold are checked.
//
// Vocabularies: BRISK_FUZZ_VOCABS, colon-separated GGUF paths. Without it,
// the llama.cpp vocab test files under BRISK_TEST_DATA (default ../shared):
//   models/llama-vocab-tests/ggml-vocab-llama-spm.gguf        SPM
//   models/stories260K.gguf                                   SPM, 512 tokens
//   models/vocab-tests/ggml-vocab-phi-3.gguf                  SPM, RSTRIP special tokens
//   models/vocab-tests/ggml-vocab-{llama-bpe,qwen2,gpt-2,deepseek-coder,deepseek-llm}.gguf
// (missing files are skipped; none at all is an error).
//
// Input: byte 0 = flags: bits 0-3 pick the vocabulary (mod count), bit 4
// add_bos, bit 5 parse_special; the rest is the text.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "engine/common.h"
#include "fuzz_util.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace {

using namespace brisk;

struct Loaded {
  std::string path;
  bool spm = false;  // model "llama": spaces are U+2581 inside
  std::unique_ptr<Tokenizer> tok;
};

std::vector<Loaded>& vocabs() {
  static std::vector<Loaded> v;
  return v;
}

[[noreturn]] void fail_check(const char* what, const Loaded& l) {
  std::fprintf(stderr, "fuzz_tokenize: invariant failed on %s: %s\n", l.path.c_str(), what);
  __builtin_trap();
}

std::vector<std::string> vocab_paths() {
  std::vector<std::string> paths;
  if (const char* env = std::getenv("BRISK_FUZZ_VOCABS"); env && *env) {
    std::string s(env);
    for (size_t b = 0;;) {
      const size_t e = s.find(':', b);
      if (e != b) paths.push_back(s.substr(b, e == std::string::npos ? std::string::npos : e - b));
      if (e == std::string::npos) break;
      b = e + 1;
    }
    return paths;
  }
  const char* env = std::getenv("BRISK_TEST_DATA");
  const std::string root = env && *env ? env : BRISK_DEFAULT_TEST_DATA;
  for (const char* rel : {"models/llama-vocab-tests/ggml-vocab-llama-spm.gguf", "models/stories260K.gguf",
                          "models/vocab-tests/ggml-vocab-phi-3.gguf",
                          "models/vocab-tests/ggml-vocab-llama-bpe.gguf", "models/vocab-tests/ggml-vocab-qwen2.gguf",
                          "models/vocab-tests/ggml-vocab-gpt-2.gguf", "models/vocab-tests/ggml-vocab-deepseek-coder.gguf",
                          "models/vocab-tests/ggml-vocab-deepseek-llm.gguf"})
    paths.push_back(root + "/" + rel);
  return paths;
}

void load_vocabs() {
  for (const std::string& p : vocab_paths()) {
    try {
      gguf::File f(p);
      VocabData d = read_gguf_vocab(f);
      Loaded l;
      l.path = p;
      l.spm = d.model == "llama";
      l.tok = Tokenizer::from_vocab(d);
      std::fprintf(stderr, "fuzz_tokenize: %s (%s, %d tokens)\n", p.c_str(), d.model.c_str(), l.tok->n_vocab());
      vocabs().push_back(std::move(l));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fuzz_tokenize: skipping %s: %s\n", p.c_str(), e.what());
    }
  }
  if (vocabs().empty()) {
    std::fprintf(stderr, "fuzz_tokenize: no vocabulary loaded (set BRISK_FUZZ_VOCABS or BRISK_TEST_DATA)\n");
#ifdef BRISK_FUZZ_REPLAY
    // ctest's replay: skipped (77) without test data, except under CI=true.
    const char* ci = std::getenv("CI");
    if (!(ci && std::string(ci) == "true")) std::exit(77);
#endif
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  load_vocabs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t flags = data[0];
  const Loaded& l = vocabs()[(flags & 15u) % vocabs().size()];
  const Tokenizer& tok = *l.tok;
  const bool add_bos = flags & 16u, parse_special = flags & 32u;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);

  // Any bytes are accepted: an exception (even brisk::Error) is a finding.
  const std::vector<int32_t> ids = tok.encode(text, add_bos, parse_special);
  const int32_t n_vocab = tok.n_vocab();
  for (int32_t id : ids)
    if (id < 0 || id >= n_vocab) fail_check("id out of range", l);
  // Without parse_special, control tokens come only from BOS/EOS.
  if (!parse_special)
    for (size_t i = 0; i < ids.size(); ++i)
      if (tok.token_type(ids[i]) == TokenType::CONTROL && !(add_bos && (i == 0 || i + 1 == ids.size())))
        fail_check("control token from plain text", l);

  const std::string decoded = tok.decode(ids.data(), ids.size(), false);
  const std::string stripped = tok.decode(ids.data(), ids.size(), true);
  if (stripped != decoded && !(tok.adds_space_prefix() && decoded == " " + stripped))
    fail_check("decode(strip) is not decode minus one leading space", l);

  // Token by token, as generated text is streamed: the pieces add up to the
  // decoded text, and the stream gives it as valid UTF-8 (U+FFFD for
  // ill-formed bytes, exactly where the whole-text sanitizer puts them).
  Utf8Stream stream;
  std::string pieces, streamed;
  int32_t prev = tok.bos();
  for (int32_t id : ids) {
    pieces += tok.token_to_piece(id);
    streamed += stream.push(generated_piece(tok, prev, id));
    prev = id;
  }
  streamed += stream.flush();
  if (pieces != decoded) fail_check("token_to_piece pieces != decode", l);
  if (!tok::utf8_valid(streamed)) fail_check("Utf8Stream produced invalid UTF-8", l);
  std::string whole;
  prev = tok.bos();
  for (int32_t id : ids) {
    whole += generated_piece(tok, prev, id);
    prev = id;
  }
  if (streamed != tok::utf8_sanitize(whole)) fail_check("streamed text != sanitized text", l);

  // Round trip of valid UTF-8 (tokenizer.h: decode(encode(x)) == x): control
  // tokens vanish in decode, so only without parse_special; SPM reads U+2581
  // in the text as a space, so not for text containing it.
  const bool valid = tok::utf8_valid(text);
  if (!parse_special && valid && !(l.spm && text.find("\xE2\x96\x81") != std::string_view::npos)) {
    if (stripped != text) fail_check("decode(encode(text)) != text for valid UTF-8", l);
  }

  // add_bos only adds BOS in front (and EOS at the end if the vocabulary
  // says so) of what the text gives on its own.
  std::vector<int32_t> base;
  if (add_bos || (parse_special && valid && !l.spm)) base = tok.encode(text, false, parse_special);
  if (add_bos) {
    const size_t pre = tok.adds_bos() ? 1 : 0;
    if (ids.size() < pre + base.size() || ids.size() > pre + base.size() + 1 || (pre && ids[0] != tok.bos()) ||
        !std::equal(base.begin(), base.end(), ids.begin() + pre) ||
        (ids.size() == pre + base.size() + 1 && ids.back() != tok.eos()))
      fail_check("encode with add_bos is not BOS + encode + (EOS)", l);
  }
  // Byte-level BPE with parse_special: the pieces with special tokens
  // rendered are the text again (no dummy prefix, no whitespace stripping
  // in these vocabularies).
  if (parse_special && valid && !l.spm) {
    std::string back;
    for (int32_t id : base) back += tok.token_to_piece(id, true);
    if (back != text) fail_check("special pieces of encode(text, parse_special) != text", l);
  }
  return 0;
}
