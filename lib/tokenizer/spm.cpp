// SPDX-License-Identifier: MIT
// SentencePiece-style BPE (tokenizer.ggml.model = "llama"), token for token
// what llama.cpp's llm_tokenizer_spm produces: spaces become U+2581, a dummy
// space is put in front of each run of text that starts the input or follows
// a special token, then adjacent symbols are merged greedily, highest piece
// score first (ties: leftmost), as long as the merged text is a token.
// Symbols that end up not being tokens are emitted as <0xNN> byte tokens.
#include <algorithm>

#include "tokenizer/bpe_core.h"
#include "tokenizer/utf8.h"
#include "tokenizer/vocab.h"

namespace brisk::tok {
namespace {

constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK

class SpmTokenizer final : public VocabTokenizer {
 public:
  explicit SpmTokenizer(Vocab v) : VocabTokenizer(std::move(v)) {
    // Byte fallback: "<0xNN>", else the byte itself as a token (llama.cpp's
    // order), else the unknown token (llama.cpp would throw; we never do).
    for (int b = 0; b < 256; ++b) {
      static const char* hex = "0123456789ABCDEF";
      const char buf[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
      int32_t id = find_token(std::string_view(buf, 6));
      if (id < 0) id = find_token(std::string_view(reinterpret_cast<const char*>(&b), 1));
      byte_token_[b] = id >= 0 ? id : v_.unk;
    }
    // Runs of text can be tokenized separately when no token can span the
    // cut; cutting before each U+2581 that follows another character is safe
    // when no token has U+2581 after a non-U+2581 character (true of
    // SentencePiece vocabularies, whose pieces only start with spaces).
    // Same result, but each run's heap is small and repeated words are
    // memoized.
    split_words_ = true;
    for (int32_t id = 0; id < v_.n_tokens && split_words_; ++id) {
      std::string_view t = v_.text(id);
      for (size_t p = t.find(kSpace, 1); p != std::string_view::npos; p = t.find(kSpace, p + 1)) {
        if (p < kSpace.size() || t.compare(p - kSpace.size(), kSpace.size(), kSpace) != 0) {
          split_words_ = false;
          break;
        }
      }
    }
    build_piece_cache();
  }

 protected:
  void encode_fragment(std::string_view text, bool after_special, bool, std::vector<int32_t>& out) const override {
    std::string s;
    s.reserve(text.size() + text.size() / 2 + 3);
    if (v_.add_space_prefix && after_special) s += kSpace;
    for (char c : text) {
      if (c == ' ')
        s += kSpace;
      else
        s += c;
    }
    Scratch sc;
    if (!split_words_) {
      tokenize(s, sc, out);
      return;
    }
    WordCache cache;
    size_t n_words = 0;
    size_t start = 0;
    auto flush = [&](size_t end) {
      std::string_view w(s.data() + start, end - start);
      start = end;
      if (w.empty()) return;
      // The memo only pays off once words start repeating.
      if (++n_words < 64) {
        tokenize(w, sc, out);
        return;
      }
      const uint64_t h = hash_bytes(w.data(), w.size());
      uint32_t n = 0;
      if (const int32_t* ids = cache.find(w, h, &n)) {
        out.insert(out.end(), ids, ids + n);
        return;
      }
      const size_t before = out.size();
      tokenize(w, sc, out);
      cache.insert(w, h, out.data() + before, static_cast<uint32_t>(out.size() - before));
    };
    // Cut only where llama.cpp's symbol split (by lead byte, see tokenize)
    // has a boundary: with invalid UTF-8 a symbol can swallow a U+2581.
    bool prev_space = true;
    for (size_t p = 0; p < s.size();) {
      const size_t len = std::min(utf8_len_lead(static_cast<uint8_t>(s[p])), s.size() - p);
      const bool space = len == kSpace.size() && s.compare(p, len, kSpace) == 0;
      if (space && !prev_space) flush(p);
      prev_space = space;
      p += len;
    }
    flush(s.size());
  }

  std::string normal_piece(int32_t id) const override {
    std::string_view t = v_.text(id);
    std::string r;
    r.reserve(t.size());
    for (size_t i = 0; i < t.size();) {
      if (t.compare(i, kSpace.size(), kSpace) == 0) {
        r += ' ';
        i += kSpace.size();
      } else {
        r += t[i++];
      }
    }
    return r;
  }

 private:
  struct Sym {
    int32_t prev, next;
    uint32_t off, n;
  };
  struct Bigram {
    float score;
    int32_t left, right;
    uint32_t size;
  };
  // Max-heap order: higher score first, then the leftmost pair.
  static bool lower(const Bigram& a, const Bigram& b) {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }

  // Per-call buffers, reused across the words of one encode().
  struct Scratch {
    std::vector<Sym> sym;
    std::vector<Bigram> heap;
  };

  void tokenize(std::string_view s, Scratch& sc, std::vector<int32_t>& out) const {
    if (s.empty()) return;
    std::vector<Sym>& sym = sc.sym;
    sym.clear();
    // Split by the lead byte's length without validation, like llama.cpp:
    // an invalid sequence becomes a symbol that is not a token -> bytes.
    for (size_t off = 0; off < s.size();) {
      const size_t len = std::min(utf8_len_lead(static_cast<uint8_t>(s[off])), s.size() - off);
      const int32_t idx = static_cast<int32_t>(sym.size());
      sym.push_back({idx - 1, off + len == s.size() ? -1 : idx + 1, static_cast<uint32_t>(off),
                     static_cast<uint32_t>(len)});
      off += len;
    }
    std::vector<Bigram>& heap = sc.heap;
    heap.clear();
    auto try_add = [&](int32_t l, int32_t r) {
      if (l < 0 || r < 0) return;
      const uint32_t size = sym[l].n + sym[r].n;
      const int32_t id = v_.index.find(std::string_view(s.data() + sym[l].off, size));
      if (id < 0 || id >= v_.n_tokens) return;
      heap.push_back({v_.scores[id], l, r, size});
      std::push_heap(heap.begin(), heap.end(), lower);
    };
    for (int32_t i = 1; i < static_cast<int32_t>(sym.size()); ++i) try_add(i - 1, i);

    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), lower);
      const Bigram bg = heap.back();
      heap.pop_back();
      Sym& l = sym[bg.left];
      Sym& r = sym[bg.right];
      // Stale entry: one side was merged away or grew since it was queued.
      if (l.n == 0 || r.n == 0 || l.n + r.n != bg.size) continue;
      l.n += r.n;
      r.n = 0;
      l.next = r.next;
      if (r.next >= 0) sym[r.next].prev = bg.left;
      try_add(l.prev, bg.left);
      try_add(bg.left, l.next);
    }

    for (int32_t i = 0; i != -1; i = sym[i].next) {
      const Sym& x = sym[i];
      const int32_t id = v_.index.find(std::string_view(s.data() + x.off, x.n));
      if (id >= 0 && id < v_.n_tokens) {
        out.push_back(id);
        continue;
      }
      for (uint32_t k = 0; k < x.n; ++k) {
        const int32_t b = byte_token_[static_cast<uint8_t>(s[x.off + k])];
        if (b >= 0) out.push_back(b);
      }
    }
  }

  int32_t byte_token_[256];
  bool split_words_ = false;
};

}  // namespace

std::unique_ptr<Tokenizer> make_spm(Vocab v) { return std::make_unique<SpmTokenizer>(std::move(v)); }

}  // namespace brisk::tok
