// SPDX-License-Identifier: MIT
// Regex pre-tokenization for byte-level BPE: text is cut into words by a
// list of regexes, each applied to the pieces the previous one produced
// (matches and the gaps between them are both kept, HF's "Isolated"
// behaviour, as llama.cpp's unicode_regex_split does). PCRE2 with UTF+UCP,
// so \p{L}, \p{N} and \s have their Unicode meanings, JIT-compiled.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace brisk::tok {

struct Span {
  uint32_t begin, end;
  bool match;  // matched by the last regex (else a gap between matches)
};

class RegexSplitter {
 public:
  // Throws brisk::Error (BRISK_ERR_BAD_FORMAT) if a pattern does not compile.
  explicit RegexSplitter(const std::vector<std::string>& patterns);
  ~RegexSplitter();
  RegexSplitter(const RegexSplitter&) = delete;
  RegexSplitter& operator=(const RegexSplitter&) = delete;

  // Splits valid UTF-8 (callers sanitize first) into words, in order,
  // covering all of text. Thread-safe.
  void split(std::string_view text, std::vector<Span>& words) const;
  bool empty() const { return codes_.empty(); }

 private:
  std::vector<void*> codes_;  // pcre2_code_8*
};

// What llama.cpp does for a tokenizer.ggml.pre value.
struct PreTokenizerSpec {
  std::vector<std::string> regexes;
  bool ignore_merges = false;  // a word that is itself a token is not split (Llama 3)
  bool add_bos = false;        // default for tokenizer.ggml.add_bos_token
};

// nullopt for a name brisk does not know; "" (key absent) gives llama.cpp's
// "default" list.
std::optional<PreTokenizerSpec> pre_tokenizer_for(std::string_view name);
// Names accepted by pre_tokenizer_for, for error messages.
std::string known_pre_tokenizers();

// The regex of the GPT-2 ByteLevel pre-tokenizer (use_regex = true).
extern const char* const kGpt2Regex;

}  // namespace brisk::tok
