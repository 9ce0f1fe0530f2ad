// SPDX-License-Identifier: MIT
// The work of one forward pass: tokens from any number of sequences, each
// with its position and KV slot. A token attends to positions 0..pos of its
// own slot, which includes the tokens of its sequence earlier in this batch.
#pragma once
#include <cstdint>
#include <vector>

namespace brisk {

struct Batch {
  std::vector<int32_t> tokens;
  std::vector<int32_t> pos;
  std::vector<int32_t> slot;
  std::vector<uint8_t> want_logits;  // 1: return this token's logits

  void clear() {
    tokens.clear();
    pos.clear();
    slot.clear();
    want_logits.clear();
  }
  void add(int32_t token, int32_t position, int32_t slot_id, bool logits) {
    tokens.push_back(token);
    pos.push_back(position);
    slot.push_back(slot_id);
    want_logits.push_back(logits ? 1 : 0);
  }
  int size() const { return static_cast<int>(tokens.size()); }
  int n_logits() const {
    int n = 0;
    for (uint8_t w : want_logits) n += w;
    return n;
  }
};

}  // namespace brisk
