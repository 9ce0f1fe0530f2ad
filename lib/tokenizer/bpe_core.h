// SPDX-License-Identifier: MIT
// Rank-based BPE merging shared by the GGUF byte-level tokenizer and the
// Hugging Face tokenizer: merges are keyed by the ids of their two sides
// (strings interned in the vocabulary's TextIndex, so a lookup is one hash of
// two integers), and a word is merged with a priority queue over adjacent
// pairs (lowest rank first, then leftmost), as llama.cpp and HF do. That is
// O(n log n) in the word length, so one huge pre-token is not quadratic.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/vocab.h"

namespace brisk::tok {

// One symbol of a word being merged: bytes [off, off+n) of the word, id of
// its text in the TextIndex (-1 if the text is not known: it never merges).
struct BpeSym {
  int32_t prev, next, id;
  uint32_t off, n;
};

class BpeMerges {
 public:
  // Adds merge (a, b) with the given rank, interning a, b and a+b into
  // `index`. A repeated pair keeps its first (best) rank.
  void add(TextIndex& index, std::string_view a, std::string_view b, int32_t rank);
  size_t size() const { return count_; }
  // Sizes the table for n merges (avoids rehashing while loading).
  void reserve(size_t n);

  // Merges the linked list of symbols in place (symbols start linked in
  // order, index i covering its own bytes). `heap` is scratch space.
  struct Bigram {
    int32_t rank, left, right, result;
    uint32_t size;
  };
  void merge(std::vector<BpeSym>& syms, std::vector<Bigram>& heap) const;

 private:
  struct Slot {
    uint64_t key;
    int32_t rank;   // -1 = empty slot
    int32_t result;
  };
  const Slot* find(int32_t a, int32_t b) const;
  void grow();
  void grow_to(size_t cap);
  std::vector<Slot> slots_;
  size_t count_ = 0;
};

// Memo of word -> token ids for one encode call. Real text repeats its
// words (Zipf), so most words skip merging entirely; keys are views into the
// caller's text, so the cache must not outlive it. Not shared between calls
// or threads: no locking, and a prompt cannot affect another's speed.
class WordCache {
 public:
  // Ids previously stored for w, or nullptr.
  const int32_t* find(std::string_view w, uint64_t h, uint32_t* n) const;
  void insert(std::string_view w, uint64_t h, const int32_t* ids, uint32_t n);

 private:
  struct Slot {
    uint64_t hash;
    const char* text;  // nullptr = empty
    uint32_t len, begin, count;
  };
  void grow();
  std::vector<Slot> slots_;
  std::vector<int32_t> ids_;
  size_t used_ = 0;
};

// GPT-2's reversible byte <-> printable-character map (bytes_to_unicode).
struct ByteMap {
  ByteMap();
  uint32_t byte_to_cp[256];
  std::string byte_to_utf8[256];
  int16_t cp_to_byte[324];  // -1 where the code point is not a mapped byte
  // Token text (mapped characters) -> raw bytes; characters outside the map
  // are kept as they are.
  std::string decode(std::string_view mapped) const;
};
const ByteMap& byte_map();

}  // namespace brisk::tok
