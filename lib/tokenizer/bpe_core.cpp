// SPDX-License-Identifier: MIT
#include "tokenizer/bpe_core.h"

#include <algorithm>
#include <cstring>

#include "tokenizer/utf8.h"

namespace brisk::tok {

namespace {
inline uint64_t pair_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}
inline size_t pair_hash(uint64_t k) {
  k ^= k >> 33;
  k *= 0xFF51AFD7ED558CCDull;
  k ^= k >> 33;
  return static_cast<size_t>(k);
}
}  // namespace

void BpeMerges::reserve(size_t n) {
  size_t cap = 64;
  while (cap < n * 2) cap <<= 1;
  if (cap > slots_.size()) grow_to(cap);
}

void BpeMerges::grow() { grow_to(std::max<size_t>(64, slots_.size() * 2)); }

void BpeMerges::grow_to(size_t cap) {
  std::vector<Slot> old;
  old.swap(slots_);
  slots_.assign(cap, Slot{0, -1, -1});
  const size_t mask = slots_.size() - 1;
  for (const Slot& s : old) {
    if (s.rank < 0) continue;
    size_t i = pair_hash(s.key) & mask;
    while (slots_[i].rank >= 0) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

const BpeMerges::Slot* BpeMerges::find(int32_t a, int32_t b) const {
  if (slots_.empty() || a < 0 || b < 0) return nullptr;
  const uint64_t key = pair_key(a, b);
  const size_t mask = slots_.size() - 1;
  for (size_t i = pair_hash(key) & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.rank < 0) return nullptr;
    if (s.key == key) return &s;
  }
}

void BpeMerges::add(TextIndex& index, std::string_view a, std::string_view b, int32_t rank) {
  const int32_t ia = index.intern(a);
  const int32_t ib = index.intern(b);
  if (find(ia, ib)) return;
  std::string ab;
  ab.reserve(a.size() + b.size());
  ab.append(a).append(b);
  const int32_t ir = index.intern(ab);
  if ((count_ + 1) * 2 > slots_.size()) grow();
  const uint64_t key = pair_key(ia, ib);
  const size_t mask = slots_.size() - 1;
  size_t i = pair_hash(key) & mask;
  while (slots_[i].rank >= 0) i = (i + 1) & mask;
  slots_[i] = Slot{key, rank, ir};
  ++count_;
}

void BpeMerges::merge(std::vector<BpeSym>& syms, std::vector<Bigram>& heap) const {
  // Heap order: lowest rank on top, then the leftmost pair.
  auto after = [](const Bigram& x, const Bigram& y) {
    return x.rank > y.rank || (x.rank == y.rank && x.left > y.left);
  };
  heap.clear();
  auto push = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    const Slot* s = find(syms[l].id, syms[r].id);
    if (!s) return;
    heap.push_back({s->rank, l, r, s->result, syms[l].n + syms[r].n});
    std::push_heap(heap.begin(), heap.end(), after);
  };
  for (int32_t i = 1; i < static_cast<int32_t>(syms.size()); ++i) {
    const Slot* s = find(syms[i - 1].id, syms[i].id);
    if (s) heap.push_back({s->rank, i - 1, i, s->result, syms[i - 1].n + syms[i].n});
  }
  std::make_heap(heap.begin(), heap.end(), after);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), after);
    const Bigram bg = heap.back();
    heap.pop_back();
    BpeSym& l = syms[bg.left];
    BpeSym& r = syms[bg.right];
    // Symbols only grow, so a changed side shows as a size mismatch.
    if (l.n == 0 || r.n == 0 || l.n + r.n != bg.size) continue;
    l.id = bg.result;
    l.n += r.n;
    r.n = 0;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = bg.left;
    push(l.prev, bg.left);
    push(bg.left, l.next);
  }
}

const int32_t* WordCache::find(std::string_view w, uint64_t h, uint32_t* n) const {
  if (slots_.empty()) return nullptr;
  const size_t mask = slots_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (!s.text) return nullptr;
    if (s.hash == h && s.len == w.size() && std::memcmp(s.text, w.data(), w.size()) == 0) {
      *n = s.count;
      return ids_.data() + s.begin;
    }
  }
}

void WordCache::grow() {
  std::vector<Slot> old;
  old.swap(slots_);
  slots_.assign(std::max<size_t>(256, old.size() * 2), Slot{0, nullptr, 0, 0, 0});
  const size_t mask = slots_.size() - 1;
  for (const Slot& s : old) {
    if (!s.text) continue;
    size_t i = s.hash & mask;
    while (slots_[i].text) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

void WordCache::insert(std::string_view w, uint64_t h, const int32_t* ids, uint32_t n) {
  if (w.empty()) return;
  if ((used_ + 1) * 2 > slots_.size()) grow();
  const size_t mask = slots_.size() - 1;
  size_t i = h & mask;
  while (slots_[i].text) i = (i + 1) & mask;
  slots_[i] = Slot{h, w.data(), static_cast<uint32_t>(w.size()), static_cast<uint32_t>(ids_.size()), n};
  ids_.insert(ids_.end(), ids, ids + n);
  ++used_;
}

ByteMap::ByteMap() {
  std::fill(std::begin(cp_to_byte), std::end(cp_to_byte), static_cast<int16_t>(-1));
  uint32_t extra = 0;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    const uint32_t cp = printable ? static_cast<uint32_t>(b) : 256 + extra++;
    byte_to_cp[b] = cp;
    cp_to_byte[cp] = static_cast<int16_t>(b);
    utf8_append(byte_to_utf8[b], cp);
  }
}

std::string ByteMap::decode(std::string_view s) const {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    int k = utf8_decode(s.data() + i, s.size() - i, cp);
    if (k <= 0) {
      out += s[i++];  // not UTF-8: keep the byte
      continue;
    }
    if (cp < 324 && cp_to_byte[cp] >= 0)
      out += static_cast<char>(cp_to_byte[cp]);
    else
      out.append(s.data() + i, static_cast<size_t>(k));
    i += static_cast<size_t>(k);
  }
  return out;
}

const ByteMap& byte_map() {
  static const ByteMap m;
  return m;
}

}  // namespace brisk::tok
