// SPDX-License-Identifier: MIT
// XXH3-128 checksums as the manifest and the bundle format record them: 32
// lower-case hex digits of the canonical (big-endian) form, so the text is the
// same on every machine and matches `xxhsum -H2`.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <xxhash.h>

namespace brisk::bundle {

struct Hash128 {
  uint8_t bytes[16] = {};  // canonical big-endian form
  bool operator==(const Hash128& o) const;
  bool operator!=(const Hash128& o) const { return !(*this == o); }
  std::string hex() const;
  // Parses exactly 32 hex digits; nullopt otherwise.
  static std::optional<Hash128> from_hex(std::string_view s);
};
constexpr size_t kHashHexLen = 32;

Hash128 hash_bytes(const void* p, size_t n);

// Streaming XXH3-128: feed bytes in pieces of any size, same result as one call.
class Hasher {
 public:
  Hasher();
  ~Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;
  void reset();
  void update(const void* p, size_t n);
  Hash128 digest() const;

 private:
  XXH3_state_t* state_;
};

}  // namespace brisk::bundle
