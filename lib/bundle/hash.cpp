// SPDX-License-Identifier: MIT
#include "bundle/hash.h"

#include <cstring>
#include <new>

namespace brisk::bundle {

namespace {
Hash128 from_xxh(XXH128_hash_t h) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, h);
  Hash128 out;
  std::memcpy(out.bytes, c.digest, 16);
  return out;
}
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // upper case is not accepted: the text form is canonical
}
}  // namespace

bool Hash128::operator==(const Hash128& o) const { return std::memcmp(bytes, o.bytes, 16) == 0; }

std::string Hash128::hex() const {
  static const char digits[] = "0123456789abcdef";
  std::string s(kHashHexLen, '0');
  for (int i = 0; i < 16; ++i) {
    s[2 * i] = digits[bytes[i] >> 4];
    s[2 * i + 1] = digits[bytes[i] & 15];
  }
  return s;
}

std::optional<Hash128> Hash128::from_hex(std::string_view s) {
  if (s.size() != kHashHexLen) return std::nullopt;
  Hash128 h;
  for (size_t i = 0; i < 16; ++i) {
    int hi = hex_value(s[2 * i]), lo = hex_value(s[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    h.bytes[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return h;
}

Hash128 hash_bytes(const void* p, size_t n) { return from_xxh(XXH3_128bits(p, n)); }

Hasher::Hasher() : state_(XXH3_createState()) {
  if (!state_) throw std::bad_alloc();
  reset();
}
Hasher::~Hasher() { XXH3_freeState(state_); }
void Hasher::reset() { XXH3_128bits_reset(state_); }
void Hasher::update(const void* p, size_t n) {
  if (n) XXH3_128bits_update(state_, p, n);
}
Hash128 Hasher::digest() const { return from_xxh(XXH3_128bits_digest(state_)); }

}  // namespace brisk::bundle
