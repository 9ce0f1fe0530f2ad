// SPDX-License-Identifier: MIT
// Work splitting for streaming passes: [0, n) units in one contiguous range
// per thread. A thread takes small steps from the front of its own range, so
// it walks one long stretch of memory (the hardware prefetcher stays
// trained, and the next step's data is already on its way); when its range
// is empty it takes steps from the back of the others', so a thread slowed
// by another process, or woken late, holds up the pass by one step at most.
//
// Each range is one atomic word (front << 32 | back) on its own cache line:
// the owner's claims are uncontended CASes until a thief arrives.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>

namespace brisk {

class RangeSplit {
 public:
  // n_ranges ranges (one per thread) over [0, n_units), taken step units at
  // a time. Not thread-safe: call between passes. n_units < 2^32.
  void reset(int n_ranges, int64_t n_units, int64_t step);
  // The next piece [*begin, *end) for the thread that owns range `self`: its
  // own front while it lasts, then the back of the other ranges. Returns
  // false once every unit has been handed out. Thread-safe.
  bool next(int self, int64_t* begin, int64_t* end);
  int n_ranges() const { return n_; }
  // Where range i of n_ranges over [0, n_units) begins (range i ends where
  // range i + 1 begins, the last at n_units).
  static int64_t range_begin(int64_t n_units, int i, int n_ranges) { return n_units * i / n_ranges; }

 private:
  struct alignas(64) Range {
    std::atomic<uint64_t> fb{0};
  };
  bool take_front(Range& r, int64_t* begin, int64_t* end);
  bool take_back(Range& r, int64_t* begin, int64_t* end);
  std::unique_ptr<Range[]> ranges_;
  int capacity_ = 0, n_ = 0;
  uint64_t step_ = 1;
};

}  // namespace brisk
