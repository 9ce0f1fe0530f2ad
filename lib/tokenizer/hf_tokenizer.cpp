// SPDX-License-Identifier: MIT
// A tokenizer with Hugging Face `tokenizers` semantics, from tokenizer.json:
// added tokens are split out first (with llama.cpp's precedence, see
// SpecialMatcher), then each run of text is normalized (Prepend, Replace),
// pre-tokenized (Split, ByteLevel, Metaspace, in sequence) and each word is
// encoded by the BPE model: characters (or, with byte_fallback, <0xNN>
// tokens for characters not in the vocabulary, else <unk>), merged by rank,
// and a word that is a token stays whole with ignore_merges.
#include "core/error.h"
#include "tokenizer/bpe_core.h"
#include "tokenizer/hf.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/utf8.h"
#include "tokenizer/vocab.h"

namespace brisk::tok {
namespace {

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  if (from.empty() || s.find(from) == std::string::npos) return;
  std::string r;
  r.reserve(s.size());
  size_t pos = 0;
  for (size_t f; (f = s.find(from, pos)) != std::string::npos; pos = f + from.size()) {
    r.append(s, pos, f - pos);
    r.append(to);
  }
  r.append(s, pos, std::string::npos);
  s.swap(r);
}

class HfTokenizer final : public VocabTokenizer {
 public:
  HfTokenizer(Vocab v, HfConfig c) : VocabTokenizer(std::move(v)), cfg_(std::move(c)) {
    for (const auto& p : cfg_.pre_tokenizers) {
      if (p.kind == HfPreTokenizer::SPLIT)
        splitters_.push_back(std::make_unique<RegexSplitter>(std::vector<std::string>{p.regex}));
      else if (p.kind == HfPreTokenizer::BYTE_LEVEL && p.use_regex)
        splitters_.push_back(std::make_unique<RegexSplitter>(std::vector<std::string>{kGpt2Regex}));
      else
        splitters_.push_back(nullptr);
    }
    for (size_t r = 0; r < cfg_.merge_pairs.size(); ++r) {
      const auto& [a, b] = cfg_.merge_pairs[r];
      // HF refuses such a file too (MergeTokenOutOfVocabulary).
      if (find_token(a) < 0 || find_token(b) < 0 || find_token(a + b) < 0)
        fail(BRISK_ERR_BAD_FORMAT, "tokenizer.json: merge '" + a + " " + b + "' uses or makes a string not in the vocabulary");
      merges_.add(v_.index, a, b, static_cast<int32_t>(r));
    }
    for (int b = 0; b < 256; ++b) {
      static const char* hex = "0123456789ABCDEF";
      const char buf[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
      byte_id_[b] = cfg_.byte_fallback ? find_token(std::string_view(buf, 6)) : -1;
    }
    build_piece_cache();
  }

 protected:
  void encode_fragment(std::string_view text, bool, bool at_start, std::vector<int32_t>& out) const override {
    // Rust strings are UTF-8: HF sees invalid bytes as U+FFFD too.
    std::string s = utf8_valid(text) ? std::string(text) : utf8_sanitize(text);
    for (const auto& n : cfg_.normalizers) {
      if (n.kind == HfNormalizer::PREPEND) {
        if (!s.empty()) s.insert(0, n.a);
      } else {
        replace_all(s, n.a, n.b);
      }
    }
    std::vector<std::string> pieces{std::move(s)};
    std::vector<std::string> next;
    std::vector<Span> spans;
    for (size_t k = 0; k < cfg_.pre_tokenizers.size(); ++k) {
      const HfPreTokenizer& p = cfg_.pre_tokenizers[k];
      next.clear();
      for (size_t i = 0; i < pieces.size(); ++i) {
        std::string& piece = pieces[i];
        if (p.kind == HfPreTokenizer::METASPACE) {
          replace_all(piece, " ", p.replacement);
          const bool prepend = p.prepend == HfPreTokenizer::ALWAYS || (p.prepend == HfPreTokenizer::FIRST && at_start && i == 0);
          if (prepend && piece.compare(0, p.replacement.size(), p.replacement) != 0) piece.insert(0, p.replacement);
          if (!p.split) {
            next.push_back(std::move(piece));
            continue;
          }
          // Each word starts at a replacement character (MergedWithNext).
          size_t start = 0;
          for (size_t f = piece.find(p.replacement, 1); f != std::string::npos; f = piece.find(p.replacement, f + 1)) {
            next.push_back(piece.substr(start, f - start));
            start = f;
          }
          next.push_back(piece.substr(start));
          continue;
        }
        if (p.kind == HfPreTokenizer::BYTE_LEVEL && p.add_prefix_space && (piece.empty() || piece[0] != ' '))
          piece.insert(piece.begin(), ' ');
        if (splitters_[k]) {
          splitters_[k]->split(piece, spans);
          // Isolated keeps the matches as words; Removed drops them.
          for (const Span& sp : spans)
            if (!(sp.match && p.kind == HfPreTokenizer::SPLIT && p.removed))
              next.push_back(piece.substr(sp.begin, sp.end - sp.begin));
        } else {
          next.push_back(std::move(piece));
        }
      }
      if (p.kind == HfPreTokenizer::BYTE_LEVEL) map_bytes(next);
      pieces.swap(next);
    }
    Scratch sc;
    for (const auto& w : pieces)
      if (!w.empty()) encode_word(w, sc, out);
  }

  std::string normal_piece(int32_t id) const override {
    std::string t(v_.text(id));
    if (cfg_.byte_level) return byte_map().decode(t);
    if (cfg_.space_marker) replace_all(t, "\xE2\x96\x81", " ");
    return t;
  }

 private:
  struct Scratch {
    std::vector<BpeSym> syms;
    std::vector<BpeMerges::Bigram> heap;
  };

  static void map_bytes(std::vector<std::string>& words) {
    const ByteMap& bm = byte_map();
    for (auto& w : words) {
      std::string m;
      m.reserve(w.size() * 2);
      for (char c : w) m += bm.byte_to_utf8[static_cast<uint8_t>(c)];
      w.swap(m);
    }
  }

  void encode_word(const std::string& w, Scratch& s, std::vector<int32_t>& out) const {
    if (cfg_.ignore_merges) {
      const int32_t id = find_token(w);
      if (id >= 0) {
        out.push_back(id);
        return;
      }
    }
    s.syms.clear();
    auto add = [&](int32_t id, uint32_t off, uint32_t n) {
      const int32_t idx = static_cast<int32_t>(s.syms.size());
      s.syms.push_back(BpeSym{idx - 1, -1, id, off, n});
      if (idx > 0) s.syms[idx - 1].next = idx;
    };
    for (size_t i = 0; i < w.size();) {
      uint32_t cp;
      const int k = utf8_decode(w.data() + i, w.size() - i, cp);
      const size_t len = k > 0 ? static_cast<size_t>(k) : 1;
      const int32_t id = find_token(std::string_view(w.data() + i, len));
      if (id >= 0) {
        add(id, static_cast<uint32_t>(i), static_cast<uint32_t>(len));
      } else {
        bool bytes_ok = cfg_.byte_fallback;
        for (size_t j = 0; j < len && bytes_ok; ++j) bytes_ok = byte_id_[static_cast<uint8_t>(w[i + j])] >= 0;
        if (bytes_ok) {
          for (size_t j = 0; j < len; ++j) add(byte_id_[static_cast<uint8_t>(w[i + j])], static_cast<uint32_t>(i + j), 1);
        } else if (cfg_.unk_id >= 0) {
          if (cfg_.fuse_unk && !s.syms.empty() && s.syms.back().id == cfg_.unk_id)
            s.syms.back().n += static_cast<uint32_t>(len);
          else
            add(cfg_.unk_id, static_cast<uint32_t>(i), static_cast<uint32_t>(len));
        }
        // no unk token: the character is dropped, as HF does
      }
      i += len;
    }
    if (s.syms.empty()) return;
    merges_.merge(s.syms, s.heap);
    for (int32_t i = 0; i != -1; i = s.syms[i].next) out.push_back(s.syms[i].id);
  }

  HfConfig cfg_;
  std::vector<std::unique_ptr<RegexSplitter>> splitters_;
  BpeMerges merges_;
  int32_t byte_id_[256];
};

}  // namespace
}  // namespace brisk::tok

namespace brisk {

std::unique_ptr<Tokenizer> Tokenizer::from_hf_json(const std::string& path_or_text) {
  tok::HfConfig c = tok::parse_hf(path_or_text);
  tok::VocabDefaults def;
  def.add_space_prefix = c.prefix_space;
  tok::Vocab v = tok::build_vocab(c.vocab, def);
  v.add_space_prefix = c.prefix_space;  // HF: from the normalizer, not from metadata
  return std::make_unique<tok::HfTokenizer>(std::move(v), std::move(c));
}

}  // namespace brisk
