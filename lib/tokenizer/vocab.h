// SPDX-License-Identifier: MIT
// Internals shared by the tokenizers: a string -> id index, the vocabulary
// (texts, scores, attributes, special ids) and a base class that does what is
// common to every model: special-token partitioning, BOS/EOS, pieces, decode.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace brisk::tok {

// Token attributes as llama.cpp keeps them (a bit set: the auto-detected EOG
// tokens get CONTROL or'ed in; Phi-3 gets RSTRIP).
enum Attr : uint16_t {
  ATTR_UNDEFINED = 0,
  ATTR_UNKNOWN = 1 << 0,
  ATTR_UNUSED = 1 << 1,
  ATTR_NORMAL = 1 << 2,
  ATTR_CONTROL = 1 << 3,
  ATTR_USER_DEFINED = 1 << 4,
  ATTR_BYTE = 1 << 5,
  ATTR_LSTRIP = 1 << 7,
  ATTR_RSTRIP = 1 << 8,
};
uint16_t attr_from_type(int32_t token_type);

inline uint64_t hash_bytes(const char* p, size_t n) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xFF51AFD7ED558CCDull);
  while (n >= 8) {
    uint64_t v;
    __builtin_memcpy(&v, p, 8);
    h = (h ^ v) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
    p += 8;
    n -= 8;
  }
  uint64_t v = 0;
  __builtin_memcpy(&v, p, n);
  h = (h ^ v) * 0x94D049BB133111EBull;
  return h ^ (h >> 29);
}

// Strings stored back to back with sequential ids; lookup by text gives the
// first id holding that text. Open addressing, so a lookup is one hash and
// usually one memcmp, with no allocation (this is on the hot path of BPE).
class TextIndex {
 public:
  // Appends s as the next id (even if the text is already present).
  int32_t add(std::string_view s);
  // Returns the id of s, adding it if absent.
  int32_t intern(std::string_view s);
  int32_t find(std::string_view s) const { return find_hashed(s, hash_bytes(s.data(), s.size())); }
  std::string_view text(int32_t id) const {
    return std::string_view(arena_.data() + off_[id], off_[id + 1] - off_[id]);
  }
  int32_t size() const { return static_cast<int32_t>(off_.size()) - 1; }
  void reserve(size_t n_strings, size_t n_bytes);

 private:
  int32_t find_hashed(std::string_view s, uint64_t h) const;
  void grow();
  std::string arena_;
  std::vector<uint32_t> off_{0};
  std::vector<int32_t> slots_;  // id + 1, 0 = empty
  std::vector<uint32_t> slot_hash_;
};

// The vocabulary as the tokenizers use it, built from VocabData with
// llama.cpp's defaults and auto-detection applied.
struct Vocab {
  TextIndex index;  // ids 0..n_tokens-1 are the tokens
  int32_t n_tokens = 0;
  std::vector<float> scores;
  std::vector<uint16_t> attrs;
  std::vector<uint8_t> eog;  // per token: ends generation
  int32_t bos = -1, eos = -1, eot = -1, eom = -1, unk = -1, pad = -1, sep = -1;
  bool add_bos = false, add_eos = false, add_space_prefix = false;
  std::string chat_template;
  std::string_view text(int32_t id) const { return index.text(id); }
  bool valid(int32_t id) const { return id >= 0 && id < n_tokens; }
};

// Finds control/user-defined tokens in text the way llama.cpp's
// tokenizer_st_partition does: longer tokens take precedence over shorter
// ones everywhere in the text (not leftmost-longest), each token's
// occurrences are taken left to right without overlap, and LSTRIP/RSTRIP
// tokens swallow adjacent ASCII whitespace. Done with one trie scan instead of
// one text search per special token, so thousands of added tokens cost little.
// Memory is linear in the text whatever the vocabulary: only the longest match
// at each position is kept, and a shorter token at that position (a prefix of
// it, reached through the trie) is considered only once the longer one is blocked.
class SpecialMatcher {
 public:
  void build(const Vocab& v);
  struct Piece {
    uint32_t begin, end;  // raw text range, or the token's range when id >= 0
    int32_t id;           // -1 for raw text
  };
  // Splits text into raw and token pieces (in order). Control and unknown
  // tokens are matched only with parse_special.
  void partition(const Vocab& v, std::string_view text, bool parse_special, std::vector<Piece>& out) const;
  bool empty() const { return tokens_.empty(); }

 private:
  struct Node {
    int32_t child = -1, sibling = -1, token = -1;
    // Nearest proper ancestor holding a token matchable without / with
    // parse_special (-1: none): the next shorter candidate at a position.
    int32_t shorter[2] = {-1, -1};
    uint8_t byte = 0;
  };
  std::vector<Node> nodes_;
  std::vector<int32_t> tokens_;    // special ids, in precedence order
  std::vector<int32_t> priority_;  // token id -> precedence (lower first)
  bool first_byte_[256] = {};
};

// Base of the GGUF-metadata tokenizers (SPM and byte-level BPE).
class VocabTokenizer : public Tokenizer {
 public:
  explicit VocabTokenizer(Vocab v);

  std::vector<int32_t> encode(std::string_view text, bool add_bos, bool parse_special) const override;
  std::string token_to_piece(int32_t id, bool special = false) const override;
  std::string decode(const int32_t* ids, size_t n, bool strip_leading_space) const override;
  int32_t n_vocab() const override { return v_.n_tokens; }
  int32_t bos() const override { return v_.bos; }
  int32_t eos() const override { return v_.eos; }
  int32_t eot() const override { return v_.eot; }
  bool is_eog(int32_t id) const override { return v_.valid(id) && v_.eog[id]; }
  bool adds_bos() const override { return v_.add_bos && v_.bos >= 0; }
  bool adds_space_prefix() const override { return v_.add_space_prefix; }
  std::string_view token_text(int32_t id) const override { return v_.valid(id) ? v_.text(id) : std::string_view(); }
  TokenType token_type(int32_t id) const override;
  int32_t find_token(std::string_view text) const override;
  const std::string& chat_template() const override { return v_.chat_template; }

 protected:
  // Tokenizes one run of text between special tokens; after_special is true
  // at the start of the text and right after a special token (SPM adds its
  // dummy space prefix there, as llama.cpp does); at_start is true only for
  // a run that begins the text (HF Metaspace prepend_scheme "first").
  virtual void encode_fragment(std::string_view text, bool after_special, bool at_start,
                               std::vector<int32_t>& out) const = 0;
  // Bytes of a NORMAL token (SPM: U+2581 -> ' '; BPE: unmapped bytes).
  virtual std::string normal_piece(int32_t id) const = 0;
  // Call at the end of the derived constructor (needs normal_piece).
  void build_piece_cache();

  Vocab v_;
  SpecialMatcher special_;
  std::vector<std::string> pieces_;  // token_to_piece(id, special=true)
};

// Model constructors (spm.cpp, bpe.cpp).
std::unique_ptr<Tokenizer> make_spm(Vocab v);
std::unique_ptr<Tokenizer> make_bpe(const VocabData& data);

// What a model assumes when the metadata is silent (llama.cpp's defaults).
struct VocabDefaults {
  int32_t bos = -1, eos = -1, unk = -1;
  bool add_bos = false;
  bool add_space_prefix = false;
};
// Applies the defaults, the metadata and llama.cpp's token auto-detection
// (EOT/EOG by text, "unused" control tokens, Phi-3 RSTRIP).
Vocab build_vocab(const VocabData& data, const VocabDefaults& def);

// A GGUF integer token id; -1 for negative/huge ("none"), nullopt if absent.
std::optional<int32_t> read_id(const gguf::File& f, std::string_view key);

}  // namespace brisk::tok
