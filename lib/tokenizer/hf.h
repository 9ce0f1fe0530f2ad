// SPDX-License-Identifier: MIT
// A parsed Hugging Face tokenizer.json: the parts brisk implements, shared by
// the tokenizer (hf_tokenizer.cpp) and the converter-facing load_hf_vocab.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace brisk::tok {

struct HfNormalizer {
  enum Kind { PREPEND, REPLACE } kind;
  std::string a, b;  // PREPEND: a = prefix; REPLACE: a -> b (literal string)
};

struct HfPreTokenizer {
  enum Kind { SPLIT, BYTE_LEVEL, METASPACE } kind;
  std::string regex;           // SPLIT (a String pattern is regex-quoted)
  bool removed = false;        // SPLIT behaviour "Removed" (else "Isolated")
  bool add_prefix_space = false;  // BYTE_LEVEL
  bool use_regex = false;         // BYTE_LEVEL: split with GPT-2's regex
  std::string replacement;        // METASPACE (U+2581)
  enum Prepend { NEVER, FIRST, ALWAYS } prepend = ALWAYS;  // METASPACE
  bool split = true;                                       // METASPACE
};

struct HfConfig {
  VocabData vocab;  // tokens (by id), types, merges "a b", special ids, model/pre guesses
  std::vector<std::pair<std::string, std::string>> merge_pairs;  // exact sides (may contain spaces)
  std::vector<HfNormalizer> normalizers;
  std::vector<HfPreTokenizer> pre_tokenizers;
  bool byte_fallback = false;
  bool ignore_merges = false;
  bool fuse_unk = false;
  int32_t unk_id = -1;
  bool byte_level = false;      // some ByteLevel pre-tokenizer maps bytes to characters
  bool space_marker = false;    // U+2581 stands for a space (Replace/Metaspace)
  bool prefix_space = false;    // a space is put in front of the text (Prepend/Metaspace)
};

// Parses tokenizer.json (path, a directory holding it, or JSON text
// starting with '{'); sibling tokenizer_config.json / config.json, when
// present, supply BOS/EOS, add_bos/add_eos and the chat template as
// convert_hf_to_gguf.py reads them.
HfConfig parse_hf(const std::string& path_or_text);

}  // namespace brisk::tok
