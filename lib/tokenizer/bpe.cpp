// SPDX-License-Identifier: MIT
// Byte-level BPE (tokenizer.ggml.model = "gpt2": GPT-2, Llama 3, Qwen2,
// DeepSeek, ...), token for token what llama.cpp's llm_tokenizer_bpe
// produces: the text is cut into words by the pre-tokenizer regexes named by
// tokenizer.ggml.pre, each word's bytes become GPT-2's printable characters,
// and merges are applied by rank.
//
// Invalid UTF-8 in the input is decoded as llama.cpp decodes it (ill-formed
// bytes become U+FFFD, see utf8_sanitize_llama); the regexes need valid UTF-8.
#include "core/error.h"
#include "tokenizer/bpe_core.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/utf8.h"
#include "tokenizer/vocab.h"

namespace brisk::tok {
namespace {

class BpeTokenizer final : public VocabTokenizer {
 public:
  BpeTokenizer(Vocab v, const VocabData& d, const PreTokenizerSpec& spec)
      : VocabTokenizer(std::move(v)), split_(spec.regexes), ignore_merges_(spec.ignore_merges) {
    const ByteMap& bm = byte_map();
    merges_.reserve(d.merges.size());
    for (size_t i = 0; i < d.merges.size(); ++i) {
      std::string_view m = d.merges[i];
      // llama.cpp splits at the first space after the first character, so a
      // side may itself be a space-free mapped character like "Ġ".
      const size_t sp = m.find(' ', 1);
      if (sp == std::string_view::npos) continue;  // malformed: no pair, no merge
      merges_.add(v_.index, m.substr(0, sp), m.substr(sp + 1), static_cast<int32_t>(i));
    }
    for (int b = 0; b < 256; ++b) {
      byte_sym_[b] = v_.index.find(bm.byte_to_utf8[b]);
      // Last resort for a word piece that is not a token: llama.cpp looks up
      // each byte of its mapped text as a one-byte token.
      fallback_[b].clear();
      for (char c : bm.byte_to_utf8[b]) {
        const int32_t id = find_token(std::string_view(&c, 1));
        if (id >= 0) fallback_[b].push_back(id);
      }
    }
    build_piece_cache();
  }

 protected:
  void encode_fragment(std::string_view text, bool, bool, std::vector<int32_t>& out) const override {
    std::string clean;
    if (!utf8_valid(text)) {
      clean = utf8_sanitize_llama(text);
      text = clean;
    }
    std::vector<Span> words;
    split_.split(text, words);
    Scratch s;
    // Short texts (a chat turn) gain nothing from the memo; skip its setup.
    const bool use_cache = words.size() >= 64;
    for (const Span& w : words) {
      std::string_view word = text.substr(w.begin, w.end - w.begin);
      if (word.size() == 1 || !use_cache) {
        encode_word(word, s, out);
        continue;
      }
      const uint64_t h = hash_bytes(word.data(), word.size());
      uint32_t n = 0;
      if (const int32_t* ids = s.cache.find(word, h, &n)) {
        out.insert(out.end(), ids, ids + n);
        continue;
      }
      const size_t before = out.size();
      encode_word(word, s, out);
      s.cache.insert(word, h, out.data() + before, static_cast<uint32_t>(out.size() - before));
    }
  }

  std::string normal_piece(int32_t id) const override { return byte_map().decode(v_.text(id)); }

 private:
  struct Scratch {
    std::vector<BpeSym> syms;
    std::vector<BpeMerges::Bigram> heap;
    std::string mapped;
    WordCache cache;
  };

  void emit_bytes(std::string_view bytes, std::vector<int32_t>& out) const {
    for (char c : bytes)
      for (int32_t id : fallback_[static_cast<uint8_t>(c)]) out.push_back(id);
  }

  void encode_word(std::string_view w, Scratch& s, std::vector<int32_t>& out) const {
    if (w.size() == 1) {
      const int32_t id = byte_sym_[static_cast<uint8_t>(w[0])];
      if (v_.valid(id))
        out.push_back(id);
      else
        emit_bytes(w, out);
      return;
    }
    if (ignore_merges_) {
      // Llama 3 (HF ignore_merges): a word that is a token stays whole even
      // if the merges would not build it.
      const ByteMap& bm = byte_map();
      s.mapped.clear();
      for (char c : w) s.mapped += bm.byte_to_utf8[static_cast<uint8_t>(c)];
      const int32_t id = find_token(s.mapped);
      if (id >= 0) {
        out.push_back(id);
        return;
      }
    }
    const int32_t n = static_cast<int32_t>(w.size());
    s.syms.resize(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i)
      s.syms[i] = BpeSym{i - 1, i + 1 < n ? i + 1 : -1, byte_sym_[static_cast<uint8_t>(w[i])], static_cast<uint32_t>(i), 1};
    merges_.merge(s.syms, s.heap);
    for (int32_t i = 0; i != -1; i = s.syms[i].next) {
      const BpeSym& x = s.syms[i];
      if (v_.valid(x.id))
        out.push_back(x.id);
      else
        emit_bytes(w.substr(x.off, x.n), out);
    }
  }

  RegexSplitter split_;
  bool ignore_merges_;
  BpeMerges merges_;
  int32_t byte_sym_[256];
  std::vector<int32_t> fallback_[256];
};

}  // namespace

std::unique_ptr<Tokenizer> make_bpe(const VocabData& d) {
  auto spec = pre_tokenizer_for(d.pre);
  if (!spec)
    fail(BRISK_ERR_UNSUPPORTED, "tokenizer: unknown tokenizer.ggml.pre '" + d.pre +
                                    "' (a wrong pre-tokenizer silently changes the tokens, so brisk refuses it; "
                                    "known: " + known_pre_tokenizers() + ")");
  if (d.merges.empty()) fail(BRISK_ERR_BAD_FORMAT, "tokenizer: gpt2 vocabulary without tokenizer.ggml.merges");
  VocabDefaults def;
  def.add_bos = spec->add_bos;
  return std::make_unique<BpeTokenizer>(build_vocab(d, def), d, *spec);
}

}  // namespace brisk::tok
