// SPDX-License-Identifier: MIT
// The .brisk bundle reader in checking mode. The first byte picks how the
// rest is used: odd -> raw bundle bytes (frame, manifest, stream); even ->
// [u16 manifest length][manifest JSON][zstd stream], framed here with a
// correct manifest hash so the fuzzer reaches the JSON checks and the
// segment hashing instead of stopping at the frame checksum.
#include <cstring>

#include "bundle/pack.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace brisk;
  if (size < 1) return 0;
  std::string bytes;
  if (data[0] & 1) {
    bytes.assign(reinterpret_cast<const char*>(data + 1), size - 1);
  } else {
    if (size < 3) return 0;
    uint16_t n;
    std::memcpy(&n, data + 1, 2);
    const size_t json_len = std::min<size_t>(n, size - 3);
    const std::string json(reinterpret_cast<const char*>(data + 3), json_len);
    bytes.assign(bundle::kBundleMagic, 8);
    const uint32_t version = bundle::kBundleVersion, flags = 0;
    const uint64_t len = json.size();
    bytes.append(reinterpret_cast<const char*>(&version), 4);
    bytes.append(reinterpret_cast<const char*>(&flags), 4);
    bytes.append(reinterpret_cast<const char*>(&len), 8);
    bytes.append(reinterpret_cast<const char*>(bundle::hash_bytes(json.data(), json.size()).bytes), 16);
    bytes += json;
    bytes.append(reinterpret_cast<const char*>(data + 3 + json_len), size - 3 - json_len);
  }
  fuzz::expect_clean([&] {
    bundle::MemorySource src(bytes.data(), bytes.size());
    bundle::ReadOptions o;
    o.max_output = 1 << 24;  // keep decompression bombs to 16 MiB per input
    (void)bundle::read_bundle(src, o, bundle::Job{});
  });
  return 0;
}
