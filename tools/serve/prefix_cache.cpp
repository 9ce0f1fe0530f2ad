// SPDX-License-Identifier: MIT
#include "serve/prefix_cache.h"

#include <algorithm>

namespace brisk::serve {

size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

std::list<PrefixCache::Entry>::const_iterator PrefixCache::best(const std::vector<int32_t>& prompt,
                                                               size_t* usable) const {
  *usable = 0;
  auto found = entries_.end();
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    size_t n = common_prefix(it->tokens, prompt);
    if (!(n == prompt.size() && n == it->tokens.size()) && n + 1 > prompt.size())
      n = prompt.empty() ? 0 : prompt.size() - 1;
    if (n > *usable) {
      *usable = n;
      found = it;
    }
  }
  return found;
}

size_t PrefixCache::usable(const std::vector<int32_t>& prompt) const {
  size_t n = 0;
  best(prompt, &n);
  return n;
}

const PrefixCache::Entry* PrefixCache::lookup(const std::vector<int32_t>& prompt, size_t* usable) {
  const auto found = best(prompt, usable);
  if (found == entries_.end()) return nullptr;
  entries_.splice(entries_.begin(), entries_, found);
  return &entries_.front();
}

void PrefixCache::insert(std::vector<int32_t> tokens, brisk_sequence* seq) {
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->tokens.size() <= tokens.size() && std::equal(it->tokens.begin(), it->tokens.end(), tokens.begin())) {
      brisk_sequence_free(it->seq);
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  entries_.push_front(Entry{std::move(tokens), seq});
}

bool PrefixCache::evict_one() {
  if (entries_.empty()) return false;
  brisk_sequence_free(entries_.back().seq);
  entries_.pop_back();
  return true;
}

void PrefixCache::clear() {
  while (evict_one()) {
  }
}

}  // namespace brisk::serve
