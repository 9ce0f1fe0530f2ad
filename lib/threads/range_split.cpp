// SPDX-License-Identifier: MIT
#include "threads/range_split.h"

#include <algorithm>

#include "core/error.h"

namespace brisk {

namespace {
constexpr uint64_t pack(uint64_t front, uint64_t back) { return front << 32 | back; }
constexpr uint64_t front_of(uint64_t w) { return w >> 32; }
constexpr uint64_t back_of(uint64_t w) { return w & 0xFFFFFFFFu; }
}  // namespace

void RangeSplit::reset(int n_ranges, int64_t n_units, int64_t step) {
  if (n_ranges < 1 || n_units < 0 || n_units > 0xFFFFFFFFll || step < 1)
    fail(BRISK_ERR_INTERNAL, "range split: bad arguments");
  if (n_ranges > capacity_) {
    ranges_ = std::make_unique<Range[]>(static_cast<size_t>(n_ranges));
    capacity_ = n_ranges;
  }
  n_ = n_ranges;
  step_ = static_cast<uint64_t>(step);
  for (int i = 0; i < n_; ++i) {
    const uint64_t lo = static_cast<uint64_t>(range_begin(n_units, i, n_)),
                   hi = static_cast<uint64_t>(range_begin(n_units, i + 1, n_));
    ranges_[i].fb.store(pack(lo, hi), std::memory_order_relaxed);
  }
}

bool RangeSplit::take_front(Range& r, int64_t* begin, int64_t* end) {
  uint64_t w = r.fb.load(std::memory_order_relaxed);
  for (;;) {
    const uint64_t f = front_of(w), b = back_of(w);
    if (f >= b) return false;
    // Whole steps while two are left, then halves, so the pass ends on
    // small pieces without paying a claim per small piece all along.
    const uint64_t left = b - f;
    const uint64_t n = left >= 2 * step_ ? step_ : std::max<uint64_t>(1, left / 2);
    const uint64_t nf = f + n;
    if (r.fb.compare_exchange_weak(w, pack(nf, b), std::memory_order_relaxed)) {
      *begin = static_cast<int64_t>(f);
      *end = static_cast<int64_t>(nf);
      return true;
    }
  }
}

bool RangeSplit::take_back(Range& r, int64_t* begin, int64_t* end) {
  uint64_t w = r.fb.load(std::memory_order_relaxed);
  for (;;) {
    const uint64_t f = front_of(w), b = back_of(w);
    if (f >= b) return false;
    const uint64_t nb = b - std::max<uint64_t>(1, std::min(step_, (b - f) / 2));
    if (r.fb.compare_exchange_weak(w, pack(f, nb), std::memory_order_relaxed)) {
      *begin = static_cast<int64_t>(nb);
      *end = static_cast<int64_t>(b);
      return true;
    }
  }
}

bool RangeSplit::next(int self, int64_t* begin, int64_t* end) {
  if (take_front(ranges_[self], begin, end)) return true;
  // Steal from the range with the most left, so thieves spread out and the
  // slowest owner loses the most.
  for (;;) {
    int best = -1;
    uint64_t most = 0;
    for (int i = 0; i < n_; ++i) {
      const uint64_t w = ranges_[i].fb.load(std::memory_order_relaxed);
      const uint64_t left = back_of(w) > front_of(w) ? back_of(w) - front_of(w) : 0;
      if (left > most) most = left, best = i;
    }
    if (best < 0) return false;
    if (take_back(ranges_[best], begin, end)) return true;
  }
}

}  // namespace brisk
