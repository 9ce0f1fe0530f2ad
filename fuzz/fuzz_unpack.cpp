// SPDX-License-Identifier: MIT
// Bundle unpacking's write path: the bundle is streamed, decompressed and
// hashed into a GGUF in a scratch directory (what brisk_unpack does, with
// decompression capped at 16 MiB per input). A failure must leave no file
// at all (no partial output, no temporary); success exactly the output.
// Input as fuzz_bundle: odd first byte -> raw bundle bytes; even ->
// [u16 manifest length][manifest JSON][zstd stream], framed here with a
// correct manifest hash.
#include <cstring>
#include <filesystem>

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
  const std::filesystem::path dir = fuzz::scratch_dir();
  const std::string out = (dir / "out.gguf").string();
  bool ok = false;
  fuzz::expect_clean([&] {
    bundle::MemorySource src(bytes.data(), bytes.size());
    bundle::ReadOptions o;
    o.out_path = out;
    o.max_output = 1 << 24;
    bundle::Job job;
    job.n_threads = 1;
    (void)bundle::read_bundle(src, o, job);
    ok = true;
  });
  const auto left = fuzz::dir_entries(dir);
  if (!ok && !left.empty()) fuzz::finding("a failed unpack left a file behind");
  if (ok && (left.size() != 1 || left[0] != "out.gguf")) fuzz::finding("an unpack left other files than its output");
  std::filesystem::remove(out);
  return 0;
}
