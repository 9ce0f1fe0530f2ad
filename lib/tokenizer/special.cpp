// SPDX-License-Identifier: MIT
// Special tokens in text, and what every vocabulary tokenizer does around
// its model: BOS/EOS, pieces, decode.
#include <algorithm>
#include <functional>
#include <map>

#include "core/error.h"
#include "tokenizer/vocab.h"

namespace brisk::tok {

namespace {
bool ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }
}  // namespace

void SpecialMatcher::build(const Vocab& v) {
  tokens_.clear();
  for (int32_t id = 0; id < v.n_tokens; ++id)
    if (v.attrs[id] & (ATTR_CONTROL | ATTR_USER_DEFINED | ATTR_UNKNOWN)) tokens_.push_back(id);
  // llama.cpp sorts by length only (std::sort, so ties land arbitrarily);
  // breaking ties by id makes the rare equal-length overlap deterministic.
  std::stable_sort(tokens_.begin(), tokens_.end(),
                   [&](int32_t a, int32_t b) { return v.text(a).size() > v.text(b).size(); });
  priority_.assign(v.n_tokens, -1);
  nodes_.assign(1, Node{});
  std::fill(std::begin(first_byte_), std::end(first_byte_), false);
  std::vector<int32_t> parent(1, -1);
  for (size_t rank = 0; rank < tokens_.size(); ++rank) {
    const int32_t id = tokens_[rank];
    priority_[id] = static_cast<int32_t>(rank);
    std::string_view t = v.text(id);
    first_byte_[static_cast<uint8_t>(t[0])] = true;
    int32_t node = 0;
    for (char ch : t) {
      const uint8_t b = static_cast<uint8_t>(ch);
      int32_t c = nodes_[node].child;
      while (c >= 0 && nodes_[c].byte != b) c = nodes_[c].sibling;
      if (c < 0) {
        Node nn;
        nn.byte = b;
        nn.sibling = nodes_[node].child;
        c = static_cast<int32_t>(nodes_.size());
        nodes_.push_back(nn);
        parent.push_back(node);
        nodes_[node].child = c;
      }
      node = c;
    }
    if (nodes_[node].token < 0) nodes_[node].token = id;  // duplicates: first wins
  }
  // Nodes are created after their parents, so one pass in index order fills
  // the shorter-token links from the parents' finished ones.
  for (size_t n = 1; n < nodes_.size(); ++n) {
    const int32_t p = parent[n];
    const int32_t tok = nodes_[p].token;
    const bool control = tok >= 0 && (v.attrs[tok] & (ATTR_CONTROL | ATTR_UNKNOWN));
    for (int mode = 0; mode < 2; ++mode)
      nodes_[n].shorter[mode] = tok >= 0 && (mode == 1 || !control) ? p : nodes_[p].shorter[mode];
  }
}

void SpecialMatcher::partition(const Vocab& v, std::string_view text, bool parse_special,
                               std::vector<Piece>& out) const {
  out.clear();
  const uint32_t n = static_cast<uint32_t>(text.size());
  if (n == 0) return;
  const uint16_t skip = parse_special ? 0 : (ATTR_CONTROL | ATTR_UNKNOWN);
  const int mode = parse_special ? 1 : 0;
  auto len_of = [&](int32_t node) { return static_cast<uint32_t>(v.text(nodes_[node].token).size()); };

  // One candidate per position: its longest matchable token (a trie node).
  struct Cand {
    int32_t prio;
    uint32_t pos;
    int32_t node;
    bool operator>(const Cand& o) const { return prio != o.prio ? prio > o.prio : pos > o.pos; }
  };
  std::vector<Cand> heap;
  if (!tokens_.empty()) {
    for (uint32_t i = 0; i < n; ++i) {
      if (!first_byte_[static_cast<uint8_t>(text[i])]) continue;
      int32_t node = 0, best = -1;
      for (uint32_t j = i; j < n; ++j) {
        const uint8_t b = static_cast<uint8_t>(text[j]);
        int32_t c = nodes_[node].child;
        while (c >= 0 && nodes_[c].byte != b) c = nodes_[c].sibling;
        if (c < 0) break;
        node = c;
        const int32_t id = nodes_[node].token;
        if (id >= 0 && !(v.attrs[id] & skip)) best = node;
      }
      if (best >= 0) heap.push_back({priority_[nodes_[best].token], i, best});
    }
  }
  if (heap.empty()) {
    out.push_back({0, n, -1});
    return;
  }

  // Longest tokens claim their occurrences first, each token's left to right;
  // an occurrence touching an already claimed byte is not a match (llama.cpp
  // only searches the raw fragments that are left). Taken ranges (with the
  // whitespace they strip) are disjoint intervals, so "is [a, b) free" is one
  // ordered-map lookup.
  std::make_heap(heap.begin(), heap.end(), std::greater<>());
  enum : uint8_t { FREE = 0, STRIPPED = 1, TOKEN = 2 };
  std::vector<uint8_t> claimed(n, FREE);
  std::map<uint32_t, uint32_t> used;  // begin -> end of claimed ranges
  std::vector<std::pair<uint32_t, int32_t>> taken;  // pos, token id
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    Cand c = heap.back();
    heap.pop_back();
    auto next = used.upper_bound(c.pos);
    if (next != used.begin() && std::prev(next)->second > c.pos) continue;  // its first byte is taken
    const uint32_t room = next == used.end() ? n - c.pos : next->first - c.pos;
    const uint32_t len = len_of(c.node);
    if (len > room) {
      // Blocked: the longest shorter token at this position that still fits
      // competes later, at its own precedence.
      int32_t s = nodes_[c.node].shorter[mode];
      while (s >= 0 && len_of(s) > room) s = nodes_[s].shorter[mode];
      if (s >= 0) {
        heap.push_back({priority_[nodes_[s].token], c.pos, s});
        std::push_heap(heap.begin(), heap.end(), std::greater<>());
      }
      continue;
    }
    const int32_t id = nodes_[c.node].token;
    uint32_t b = c.pos, e = c.pos + len;
    std::fill(claimed.begin() + b, claimed.begin() + e, TOKEN);
    taken.push_back({c.pos, id});
    if (v.attrs[id] & ATTR_LSTRIP)
      for (; b > 0 && claimed[b - 1] == FREE && ascii_space(text[b - 1]); --b) claimed[b - 1] = STRIPPED;
    if (v.attrs[id] & ATTR_RSTRIP)
      for (; e < n && claimed[e] == FREE && ascii_space(text[e]); ++e) claimed[e] = STRIPPED;
    used.emplace(b, e);
  }
  std::sort(taken.begin(), taken.end());
  size_t t = 0;
  uint32_t i = 0;
  while (i < n) {
    if (claimed[i] == FREE) {
      uint32_t j = i;
      while (j < n && claimed[j] == FREE) ++j;
      out.push_back({i, j, -1});
      i = j;
    } else if (claimed[i] == TOKEN) {
      const auto [pos, id] = taken[t++];
      const uint32_t len = static_cast<uint32_t>(v.text(id).size());
      out.push_back({pos, pos + len, id});
      i = pos + len;
    } else {
      ++i;
    }
  }
}

// ---- VocabTokenizer ----

VocabTokenizer::VocabTokenizer(Vocab v) : v_(std::move(v)) { special_.build(v_); }

void VocabTokenizer::build_piece_cache() {
  pieces_.resize(static_cast<size_t>(v_.n_tokens));
  for (int32_t id = 0; id < v_.n_tokens; ++id) {
    const uint16_t a = v_.attrs[id];
    std::string_view t = v_.text(id);
    if (a & (ATTR_CONTROL | ATTR_UNKNOWN | ATTR_USER_DEFINED)) {
      pieces_[id] = std::string(t);
    } else if (a & ATTR_NORMAL) {
      pieces_[id] = normal_piece(id);
    } else if (a & ATTR_BYTE) {
      // "<0xNN>"; anything else is kept as text rather than guessed at
      auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        return -1;
      };
      if (t.size() == 6 && t.substr(0, 3) == "<0x" && t[5] == '>' && hex(t[3]) >= 0 && hex(t[4]) >= 0)
        pieces_[id] = std::string(1, static_cast<char>(hex(t[3]) * 16 + hex(t[4])));
      else
        pieces_[id] = std::string(t);
    }
    // UNUSED / UNDEFINED tokens produce nothing, as in llama.cpp.
  }
}

std::vector<int32_t> VocabTokenizer::encode(std::string_view text, bool add_bos, bool parse_special) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  if (add_bos && v_.add_bos && v_.bos >= 0) out.push_back(v_.bos);
  std::vector<SpecialMatcher::Piece> pieces;
  special_.partition(v_, text, parse_special, pieces);
  bool after_special = true;
  for (const auto& p : pieces) {
    if (p.id >= 0) {
      out.push_back(p.id);
      after_special = true;
    } else {
      encode_fragment(text.substr(p.begin, p.end - p.begin), after_special, p.begin == 0, out);
      after_special = false;
    }
  }
  if (add_bos && v_.add_eos && v_.eos >= 0) out.push_back(v_.eos);
  return out;
}

std::string VocabTokenizer::token_to_piece(int32_t id, bool special) const {
  if (!v_.valid(id)) return {};
  if (!special && (v_.attrs[id] & (ATTR_CONTROL | ATTR_UNKNOWN))) return {};
  return pieces_[id];
}

std::string VocabTokenizer::decode(const int32_t* ids, size_t n, bool strip_leading_space) const {
  std::string out;
  // The dummy prefix sits at the start of the first piece with text (after
  // a BOS, which renders as nothing).
  bool strip = strip_leading_space && v_.add_space_prefix;
  for (size_t i = 0; i < n; ++i) {
    const int32_t id = ids[i];
    if (!v_.valid(id) || (v_.attrs[id] & (ATTR_CONTROL | ATTR_UNKNOWN))) continue;
    std::string_view p = pieces_[id];
    if (p.empty()) continue;
    if (strip && p[0] == ' ') p.remove_prefix(1);
    strip = false;
    out.append(p.data(), p.size());
  }
  return out;
}

TokenType VocabTokenizer::token_type(int32_t id) const {
  if (!v_.valid(id)) return TokenType::UNDEFINED;
  const uint16_t a = v_.attrs[id];
  if (a & ATTR_CONTROL) return TokenType::CONTROL;
  if (a & ATTR_USER_DEFINED) return TokenType::USER_DEFINED;
  if (a & ATTR_UNKNOWN) return TokenType::UNKNOWN;
  if (a & ATTR_BYTE) return TokenType::BYTE;
  if (a & ATTR_UNUSED) return TokenType::UNUSED;
  if (a & ATTR_NORMAL) return TokenType::NORMAL;
  return TokenType::UNDEFINED;
}

int32_t VocabTokenizer::find_token(std::string_view text) const {
  const int32_t id = v_.index.find(text);
  return v_.valid(id) ? id : -1;
}

}  // namespace brisk::tok
