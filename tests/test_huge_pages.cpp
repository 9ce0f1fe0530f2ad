// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <cstdint>
#include <utility>

#include "core/huge_pages.h"

using brisk::HugePageBuffer;

TEST_CASE("huge-page buffers: aligned, zeroed, writable, movable", "[core]") {
  HugePageBuffer empty(0, "nothing");
  REQUIRE(empty.data() == nullptr);
  REQUIRE(empty.size() == 0);

  const size_t n = (size_t{3} << 20) + 123;  // not a whole number of pages
  HugePageBuffer b(n, "a test buffer");
  REQUIRE(b.data() != nullptr);
  REQUIRE(b.size() == n);
  REQUIRE(reinterpret_cast<uintptr_t>(b.data()) % (size_t{2} << 20) == 0);
  REQUIRE(b.data()[0] == 0);
  REQUIRE(b.data()[n - 1] == 0);
  b.data()[0] = 7;
  b.data()[n - 1] = 9;

  HugePageBuffer moved(std::move(b));
  REQUIRE(b.data() == nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state is the point
  REQUIRE(moved.size() == n);
  REQUIRE(moved.data()[0] == 7);
  REQUIRE(moved.data()[n - 1] == 9);

  HugePageBuffer other(1, "another");
  other = std::move(moved);
  REQUIRE(other.size() == n);
  REQUIRE(other.data()[n - 1] == 9);
}

TEST_CASE("huge-page buffers: an impossible size fails with a message naming the buffer", "[core]") {
  try {
    HugePageBuffer b(size_t{1} << 60, "the impossible buffer");
    FAIL("an exabyte mapping succeeded");
  } catch (const std::exception& e) {
    REQUIRE(std::string(e.what()).find("the impossible buffer") != std::string::npos);
  }
}
