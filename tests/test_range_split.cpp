// SPDX-License-Identifier: MIT
// RangeSplit: every unit handed out exactly once, owners walk their own
// stretch front to back, and idle threads take over a slow thread's work.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>
#include <vector>

#include "threads/range_split.h"

using brisk::RangeSplit;

namespace {

// Runs n_threads threads, thread t owning range t % n_ranges (threads beyond
// n_ranges are pure thieves); returns how often each unit was handed out and,
// per thread, the pieces it got.
struct Outcome {
  std::vector<int> count;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> pieces;
};
Outcome drain(RangeSplit& s, int n_threads, int64_t n_units, int slow_thread = -1) {
  Outcome o;
  std::vector<std::atomic<int>> count(static_cast<size_t>(n_units));
  o.pieces.resize(static_cast<size_t>(n_threads));
  std::vector<std::thread> th;
  for (int t = 0; t < n_threads; ++t)
    th.emplace_back([&, t] {
      int64_t b, e;
      while (s.next(t % s.n_ranges(), &b, &e)) {
        o.pieces[t].push_back({b, e});
        for (int64_t u = b; u < e; ++u) count[static_cast<size_t>(u)].fetch_add(1);
        if (t == slow_thread) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    });
  for (auto& x : th) x.join();
  for (auto& c : count) o.count.push_back(c.load());
  return o;
}

}  // namespace

TEST_CASE("range split hands out every unit exactly once", "[threads][split]") {
  RangeSplit s;
  for (int n_ranges : {1, 2, 3, 8})
    for (int64_t n_units : {0, 1, 2, 7, 100, 1001})
      for (int64_t step : {1, 3, 4, 64}) {
        INFO("ranges " << n_ranges << " units " << n_units << " step " << step);
        s.reset(n_ranges, n_units, step);
        const Outcome o = drain(s, n_ranges + 1, n_units);
        for (int64_t u = 0; u < n_units; ++u) REQUIRE(o.count[static_cast<size_t>(u)] == 1);
        for (const auto& p : o.pieces)
          for (const auto& [b, e] : p) {
            CHECK(b < e);
            CHECK(e - b <= step);
          }
      }
}

TEST_CASE("an owner alone walks its range front to back in steps", "[threads][split]") {
  RangeSplit s;
  s.reset(4, 103, 5);
  int64_t b, e, expect = 103 * 2 / 4;  // range 2 starts here
  for (int i = 0; i < 3; ++i) {
    REQUIRE(s.next(2, &b, &e));
    CHECK(b == expect);
    CHECK(e == expect + 5);
    expect = e;
  }
}

TEST_CASE("a slow thread's range is taken over by the others", "[threads][split]") {
  RangeSplit s;
  s.reset(2, 400, 2);
  const Outcome o = drain(s, 2, 400, /*slow_thread=*/1);
  for (int c : o.count) REQUIRE(c == 1);
  size_t fast = 0, slow = 0;
  for (const auto& [b, e] : o.pieces[0]) fast += static_cast<size_t>(e - b);
  for (const auto& [b, e] : o.pieces[1]) slow += static_cast<size_t>(e - b);
  // The slow thread sleeps 2 ms per piece; the fast one drains ~all of it.
  CHECK(fast > 3 * slow);
}

TEST_CASE("range split refuses arguments it cannot represent", "[threads][split]") {
  RangeSplit s;
  CHECK_THROWS(s.reset(0, 10, 1));
  CHECK_THROWS(s.reset(2, 10, 0));
  CHECK_THROWS(s.reset(2, int64_t{1} << 33, 1));
}
