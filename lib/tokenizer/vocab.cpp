// SPDX-License-Identifier: MIT
// The vocabulary: string index, llama.cpp's defaults and special-token
// auto-detection, reading tokenizer.ggml.* from GGUF, and the factories.
#include "tokenizer/vocab.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "core/error.h"
#include "gguf/gguf.h"

namespace brisk::tok {

// ---- TextIndex ----

void TextIndex::reserve(size_t n_strings, size_t n_bytes) {
  arena_.reserve(n_bytes);
  off_.reserve(n_strings + 1);
  size_t cap = 16;
  while (cap < n_strings * 2) cap <<= 1;
  if (cap > slots_.size()) {
    slots_.assign(cap, 0);
    slot_hash_.assign(cap, 0);
    for (int32_t id = 0; id < size(); ++id) {
      std::string_view s = text(id);
      uint64_t h = hash_bytes(s.data(), s.size());
      size_t mask = slots_.size() - 1;
      for (size_t i = h & mask;; i = (i + 1) & mask) {
        if (slots_[i] == 0) {
          slots_[i] = id + 1;
          slot_hash_[i] = static_cast<uint32_t>(h >> 32);
          break;
        }
        // keep the first id of duplicate texts findable: later ones go after it
      }
    }
  }
}

void TextIndex::grow() { reserve(std::max<size_t>(16, slots_.size()), arena_.size()); }

int32_t TextIndex::find_hashed(std::string_view s, uint64_t h) const {
  if (slots_.empty()) return -1;
  const size_t mask = slots_.size() - 1;
  const uint32_t tag = static_cast<uint32_t>(h >> 32);
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const int32_t slot = slots_[i];
    if (slot == 0) return -1;
    if (slot_hash_[i] == tag) {
      const int32_t id = slot - 1;
      const uint32_t b = off_[id], e = off_[id + 1];
      if (e - b == s.size() && (s.empty() || std::memcmp(arena_.data() + b, s.data(), s.size()) == 0)) return id;
    }
  }
}

int32_t TextIndex::add(std::string_view s) {
  if (arena_.size() + s.size() > UINT32_MAX) fail(BRISK_ERR_BAD_FORMAT, "tokenizer: vocabulary text too large");
  const int32_t id = size();
  arena_.append(s.data(), s.size());
  off_.push_back(static_cast<uint32_t>(arena_.size()));
  if (static_cast<size_t>(size()) * 2 > slots_.size()) {
    reserve(static_cast<size_t>(size()) * 2, arena_.size());  // rehashes everything, this id included
    return id;
  }
  const uint64_t h = hash_bytes(s.data(), s.size());
  const size_t mask = slots_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    if (slots_[i] == 0) {
      slots_[i] = id + 1;
      slot_hash_[i] = static_cast<uint32_t>(h >> 32);
      break;
    }
  }
  return id;
}

int32_t TextIndex::intern(std::string_view s) {
  int32_t id = find(s);
  return id >= 0 ? id : add(s);
}

// ---- attributes and defaults ----

uint16_t attr_from_type(int32_t t) {
  switch (static_cast<TokenType>(t)) {
    case TokenType::NORMAL: return ATTR_NORMAL;
    case TokenType::UNKNOWN: return ATTR_UNKNOWN;
    case TokenType::CONTROL: return ATTR_CONTROL;
    case TokenType::USER_DEFINED: return ATTR_USER_DEFINED;
    case TokenType::UNUSED: return ATTR_UNUSED;
    case TokenType::BYTE: return ATTR_BYTE;
    default: return ATTR_UNDEFINED;
  }
}

namespace {

template <size_t N>
bool is_one_of(std::string_view s, const std::string_view (&list)[N]) {
  return std::find(std::begin(list), std::end(list), s) != std::end(list);
}

// Token texts that llama.cpp treats as end of generation (llama-vocab.cpp),
// since converters do not record them all as metadata.
constexpr std::string_view kEotTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
    "<EOT>", "_<EOT>", "[EOT]", "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",
    "<end_of_utterance>"};
constexpr std::string_view kEogTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",
    // fill-in-the-middle pad / repo / file separators (Qwen2.5-Coder & co.)
    "<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<|fim_repo|>", "<|repo_name|>", "<fim-repo>",
    "<REPO>", "<reponame>", "<|file_sep|>"};

}  // namespace

Vocab build_vocab(const VocabData& d, const VocabDefaults& def) {
  Vocab v;
  const size_t n = d.tokens.size();
  if (n == 0) fail(BRISK_ERR_BAD_FORMAT, "tokenizer: the vocabulary has no tokens");
  if (n > static_cast<size_t>(INT32_MAX / 2)) fail(BRISK_ERR_BAD_FORMAT, "tokenizer: vocabulary too large");
  if (!d.scores.empty() && d.scores.size() < n)
    fail(BRISK_ERR_BAD_FORMAT, "tokenizer: " + std::to_string(d.scores.size()) + " scores for " +
                                   std::to_string(n) + " tokens");
  if (!d.token_types.empty() && d.token_types.size() < n)
    fail(BRISK_ERR_BAD_FORMAT, "tokenizer: " + std::to_string(d.token_types.size()) + " token types for " +
                                   std::to_string(n) + " tokens");
  v.n_tokens = static_cast<int32_t>(n);
  size_t bytes = 0;
  for (const auto& t : d.tokens) bytes += t.size();
  v.index.reserve(n, bytes);
  v.scores.assign(n, 0.0f);
  v.attrs.assign(n, ATTR_NORMAL);
  for (size_t i = 0; i < n; ++i) {
    // llama.cpp renames empty tokens so that every id has a distinct text.
    if (d.tokens[i].empty())
      v.index.add("[EMPTY_" + std::to_string(i) + "]");
    else
      v.index.add(d.tokens[i]);
    if (!d.scores.empty()) v.scores[i] = d.scores[i];
    if (!d.token_types.empty()) v.attrs[i] = attr_from_type(d.token_types[i]);
  }

  auto pick = [&](const std::optional<int32_t>& given, int32_t fallback) {
    // Out-of-range ids (e.g. 0xFFFFFFFF for "none") keep the default, as in llama.cpp.
    if (given && *given >= 0 && *given < v.n_tokens) return *given;
    return fallback >= 0 && fallback < v.n_tokens ? fallback : -1;
  };
  v.bos = pick(d.bos_id, def.bos);
  v.eos = pick(d.eos_id, def.eos);
  v.unk = pick(d.unk_id, def.unk);
  v.pad = pick(d.pad_id, -1);
  v.sep = pick(d.sep_id, -1);
  v.eot = pick(d.eot_id, -1);
  v.eom = pick(d.eom_id, -1);
  v.add_bos = d.add_bos.value_or(def.add_bos);
  v.add_eos = d.add_eos.value_or(false);
  v.add_space_prefix = d.add_space_prefix.value_or(def.add_space_prefix);
  v.chat_template = d.chat_template;

  // Auto-detection by text. llama.cpp walks a hash map, so when a vocabulary
  // has several candidates its choice is arbitrary; we take the first in
  // list order, so that Llama 3's EOT is <|eot_id|>, not <|end_of_text|>.
  auto detect = [&](int32_t& slot, std::string_view t) {
    const int32_t id = v.index.find(t);
    if (slot >= 0 || id < 0 || id >= v.n_tokens) return;
    slot = id;
    v.attrs[id] |= ATTR_CONTROL;
  };
  for (std::string_view t : kEotTexts) detect(v.eot, t);
  detect(v.eom, "<|eom_id|>");
  for (int32_t id = 0; id < v.n_tokens; ++id) {
    if ((v.attrs[id] & ATTR_CONTROL) && v.text(id).find("unused") != std::string_view::npos)
      v.attrs[id] |= ATTR_UNUSED;
  }
  v.eog.assign(n, 0);
  for (int32_t id = 0; id < v.n_tokens; ++id) {
    if (is_one_of(v.text(id), kEogTexts)) {
      v.eog[id] = 1;
      v.attrs[id] |= ATTR_CONTROL;
    }
  }
  for (int32_t id : {v.eos, v.eot, v.eom})
    if (id >= 0) v.eog[id] = 1;
  // gpt-oss / solar-open: "<|end|>" ends a message, not the generation.
  {
    auto has = [&](std::string_view t) {
      int32_t id = v.index.find(t);
      return id >= 0 && id < v.n_tokens && v.eog[id];
    };
    if (((has("<|return|>") && has("<|call|>")) || (has("<|calls|>") && has("<|flush|>"))) && has("<|end|>")) {
      int32_t id = v.index.find("<|end|>");
      v.eog[id] = 0;
      v.attrs[id] = ATTR_USER_DEFINED;
    }
    if (has("<|tool_response>") && has("</s>")) {  // gemma4
      int32_t id = v.index.find("</s>");
      v.eog[id] = 0;
      v.attrs[id] = ATTR_NORMAL;
    }
  }

  // Phi-3's added tokens strip the whitespace that follows them (llama.cpp
  // keys this on the model name, as the GGUF has no per-token flags).
  std::string lname = d.name;
  for (char& c : lname) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lname.find("phi-3") != std::string::npos || lname.find("phi3") != std::string::npos) {
    for (int32_t id = 0; id < v.n_tokens; ++id)
      if (v.attrs[id] & (ATTR_CONTROL | ATTR_USER_DEFINED | ATTR_UNKNOWN)) v.attrs[id] |= ATTR_RSTRIP;
    auto set_rstrip = [&](std::string_view t, bool on) {
      int32_t id = v.index.find(t);
      if (id < 0 || id >= v.n_tokens) return;
      if (on)
        v.attrs[id] |= ATTR_RSTRIP;
      else
        v.attrs[id] &= static_cast<uint16_t>(~ATTR_RSTRIP);
    };
    set_rstrip("</s>", true);
    for (auto t : {"<unk>", "<s>", "<|endoftext|>"}) set_rstrip(t, false);
  }
  return v;
}

// ---- GGUF ----

std::optional<int32_t> read_id(const gguf::File& f, std::string_view key) {
  const gguf::Value* v = f.find(key);
  if (!v) return std::nullopt;
  if (!v->is_integer()) f.fail_format("metadata key '" + std::string(key) + "' must be an integer token id");
  // Negative or huge values mean "none"; build_vocab treats them as absent.
  if (v->i < 0 || v->u > static_cast<uint64_t>(INT32_MAX)) return -1;
  return static_cast<int32_t>(v->u);
}

}  // namespace brisk::tok

namespace brisk {

using tok::read_id;

VocabData read_gguf_vocab(const gguf::File& f) {
  using gguf::ValueType;
  VocabData d;
  d.model = f.get_string("tokenizer.ggml.model");
  d.pre = f.opt_string("tokenizer.ggml.pre").value_or("");
  d.name = f.opt_string("general.name").value_or("");
  d.chat_template = f.opt_string("tokenizer.chat_template").value_or("");

  const gguf::Value& toks = f.get_array("tokenizer.ggml.tokens", ValueType::STRING);
  d.tokens.reserve(toks.items.size());
  for (const auto& it : toks.items) d.tokens.emplace_back(it.str);

  if (const gguf::Value* sc = f.find("tokenizer.ggml.scores")) {
    if (sc->type != ValueType::ARRAY || (sc->elem_type != ValueType::FLOAT32 && sc->elem_type != ValueType::INT32))
      f.fail_format("tokenizer.ggml.scores must be an array of float32 or int32");
    if (sc->count < d.tokens.size()) f.fail_format("tokenizer.ggml.scores has fewer entries than tokens");
    d.scores.resize(d.tokens.size());
    for (size_t i = 0; i < d.tokens.size(); ++i) d.scores[i] = static_cast<float>(sc->number_at(i));
  }
  if (const gguf::Value* tt = f.opt_array("tokenizer.ggml.token_type", ValueType::INT32)) {
    if (tt->count < d.tokens.size()) f.fail_format("tokenizer.ggml.token_type has fewer entries than tokens");
    d.token_types.resize(d.tokens.size());
    for (size_t i = 0; i < d.tokens.size(); ++i) d.token_types[i] = static_cast<int32_t>(tt->integer_at(i));
  }
  if (const gguf::Value* m = f.opt_array("tokenizer.ggml.merges", ValueType::STRING)) {
    d.merges.reserve(m->items.size());
    for (const auto& it : m->items) d.merges.emplace_back(it.str);
  }
  d.bos_id = read_id(f, "tokenizer.ggml.bos_token_id");
  d.eos_id = read_id(f, "tokenizer.ggml.eos_token_id");
  d.unk_id = read_id(f, "tokenizer.ggml.unknown_token_id");
  d.pad_id = read_id(f, "tokenizer.ggml.padding_token_id");
  d.sep_id = read_id(f, "tokenizer.ggml.seperator_token_id");  // sic: the GGUF key is misspelt
  d.eot_id = read_id(f, "tokenizer.ggml.eot_token_id");
  d.eom_id = read_id(f, "tokenizer.ggml.eom_token_id");
  d.add_bos = f.opt_bool("tokenizer.ggml.add_bos_token");
  d.add_eos = f.opt_bool("tokenizer.ggml.add_eos_token");
  d.add_space_prefix = f.opt_bool("tokenizer.ggml.add_space_prefix");
  return d;
}

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const gguf::File& file) {
  try {
    return from_vocab(read_gguf_vocab(file));
  } catch (const Error& e) {
    // Name the file: the vocabulary errors themselves do not know it.
    if (std::string_view(e.what()).find(file.path()) != std::string_view::npos) throw;
    throw Error(e.code(), file.path() + ": " + e.what());
  }
}

std::unique_ptr<Tokenizer> Tokenizer::from_vocab(const VocabData& d) {
  if (d.model == "llama") {
    tok::VocabDefaults def;
    def.bos = 1;
    def.eos = 2;
    def.unk = 0;
    def.add_bos = true;
    def.add_space_prefix = true;
    return tok::make_spm(tok::build_vocab(d, def));
  }
  if (d.model == "gpt2") return tok::make_bpe(d);
  fail(BRISK_ERR_UNSUPPORTED, "tokenizer: unsupported tokenizer.ggml.model '" + d.model +
                                  "' (brisk supports 'llama' and 'gpt2')");
}

}  // namespace brisk
