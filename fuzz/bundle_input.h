// SPDX-License-Identifier: MIT
// The input layout fuzz_bundle and fuzz_unpack share. The first byte picks
// how the rest is used: odd -> raw bundle bytes; even -> [u16 manifest
// length][manifest JSON][zstd stream], framed here with a correct manifest
// hash so the fuzzer reaches the JSON checks and the segment hashing.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "bundle/pack.h"

// False when the input is too short to mean anything.
inline bool bundle_input(const uint8_t* data, size_t size, std::string* out) {
  using namespace brisk;
  if (size < 1) return false;
  if (data[0] & 1) {
    out->assign(reinterpret_cast<const char*>(data + 1), size - 1);
  } else {
    if (size < 3) return false;
    uint16_t n;
    std::memcpy(&n, data + 1, 2);
    const size_t json_len = std::min<size_t>(n, size - 3);
    const std::string json(reinterpret_cast<const char*>(data + 3), json_len);
    out->assign(bundle::kBundleMagic, 8);
    const uint32_t version = bundle::kBundleVersion, flags = 0;
    const uint64_t len = json.size();
    out->append(reinterpret_cast<const char*>(&version), 4);
    out->append(reinterpret_cast<const char*>(&flags), 4);
    out->append(reinterpret_cast<const char*>(&len), 8);
    out->append(reinterpret_cast<const char*>(bundle::hash_bytes(json.data(), json.size()).bytes), 16);
    *out += json;
    out->append(reinterpret_cast<const char*>(data + 3 + json_len), size - 3 - json_len);
  }
  return true;
}
