// SPDX-License-Identifier: MIT
// The shared-prefix cache: idle sequences holding the KV of earlier prompts.
// A request whose tokens begin like a cached prompt forks that sequence (a
// copy of its KV rows, not a recomputation), cuts the fork back to the
// common part and evaluates only the rest. Entries are kept in a fixed
// number of engine slots, least recently used first out.
#pragma once
#include <cstddef>
#include <cstdint>
#include <list>
#include <vector>

#include "brisk/brisk.h"

namespace brisk::serve {

// How many leading tokens a and b share.
size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b);

class PrefixCache {
 public:
  struct Entry {
    std::vector<int32_t> tokens;  // what the sequence holds, all evaluated
    brisk_sequence* seq = nullptr;
  };

  explicit PrefixCache(size_t capacity) : capacity_(capacity) {}
  ~PrefixCache() { clear(); }
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  // The entry sharing the longest prefix with `prompt` (nullptr if none) and
  // in *usable how many of its tokens a fork can keep: the whole prompt only
  // if the entry holds exactly it (its logits are then the prompt's), else
  // at most all but the prompt's last token, which must be evaluated to get
  // logits. The entry becomes the most recently used.
  const Entry* lookup(const std::vector<int32_t>& prompt, size_t* usable);
  // What lookup() would give in *usable, without touching the LRU order.
  size_t usable(const std::vector<int32_t>& prompt) const;
  // Keeps an idle sequence holding `tokens` (taking ownership). Entries
  // holding a prefix of them are dropped: the new one serves every prompt
  // they could. Call make_room() first when full.
  void insert(std::vector<int32_t> tokens, brisk_sequence* seq);
  // Frees the least recently used entry; false if there is none.
  bool evict_one();
  void clear();

  size_t size() const { return entries_.size(); }
  size_t capacity() const { return capacity_; }
  bool full() const { return entries_.size() >= capacity_; }

 private:
  std::list<Entry>::const_iterator best(const std::vector<int32_t>& prompt, size_t* usable) const;

  size_t capacity_;
  std::list<Entry> entries_;  // most recently used first
};

}  // namespace brisk::serve
