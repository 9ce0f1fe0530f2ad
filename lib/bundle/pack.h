// SPDX-License-Identifier: MIT
// .brisk bundles: one zstd-compressed GGUF with a checksum manifest in front,
// so that unpacking can verify every byte as it streams (format:
// docs/manifest.md).
//
//   offset  size  field
//   0       8     magic "BRISKBDL"
//   8       4     format version (1), little-endian
//   12      4     flags (0; any other value is refused)
//   16      8     manifest size M in bytes
//   24      16    XXH3-128 of the manifest bytes (canonical form)
//   40      M     manifest: UTF-8 JSON (segments of the GGUF and their hashes)
//   40+M    ...   zstd frame(s) holding the GGUF file, to the end of the file
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "bundle/hash.h"
#include "bundle/job.h"
#include "bundle/verify.h"

namespace brisk::bundle {

inline constexpr char kBundleMagic[8] = {'B', 'R', 'I', 'S', 'K', 'B', 'D', 'L'};
inline constexpr uint32_t kBundleVersion = 1;
inline constexpr size_t kBundleHeaderSize = 40;
inline constexpr uint64_t kMaxManifestSize = uint64_t(64) << 20;
// zstd window limit: pack() never asks for more, unpack refuses more (128 MiB
// windows, what every zstd decoder accepts by default).
inline constexpr int kMaxWindowLog = 27;

// A contiguous byte range of the GGUF file and its XXH3-128.
struct Segment {
  std::string name;  // "header", "tensor 'x'", "padding"
  uint64_t offset = 0, size = 0;
  Hash128 hash;
};

struct BundleManifest {
  uint32_t version = kBundleVersion;
  std::string tool;
  uint64_t gguf_size = 0;
  bool gguf_manifest = false;  // the GGUF embeds a brisk manifest
  int level = 0;
  bool long_distance = false;
  std::vector<Segment> segments;  // cover [0, gguf_size) in order, no gaps

  std::string to_json() const;
  // Validates everything (types, ranges, contiguous coverage); throws
  // BRISK_ERR_BAD_FORMAT naming the problem.
  static BundleManifest from_json(const std::string& text);
};

struct PackOptions {
  int level = 3;           // zstd level, 1..19 (ZSTD_maxCLevel() with ultra)
  // zstd long-distance matching. -1: only when a tensor's data appears twice
  // farther apart than the level's window (then the window grows to reach
  // it, up to 128 MiB); 0 off; 1 on with a window covering the file (<= 128 MiB).
  int long_distance = -1;
  MapOptions input;  // how the GGUF is brought in (mlock, read into memory)
};

// Where a bundle's bytes come from: a file, or memory (tests and fuzzing).
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Up to n bytes; 0 at the end.
  virtual size_t read(void* buf, size_t n) = 0;
  virtual std::string name() const = 0;
};

class MemorySource : public ByteSource {
 public:
  MemorySource(const void* p, size_t n) : p_(static_cast<const uint8_t*>(p)), n_(n) {}
  size_t read(void* buf, size_t n) override;
  std::string name() const override { return "<memory>"; }

 private:
  const uint8_t* p_;
  size_t n_, pos_ = 0;
};

// True if the file starts with the bundle magic.
bool is_bundle(const std::string& path);

// Compresses a GGUF into a bundle (written atomically). A GGUF with an
// embedded manifest is verified first and refused if damaged.
void pack(const std::string& gguf_path, const std::string& out_path, const PackOptions& options, const Job& job);

struct ReadOptions {
  std::string out_path;   // "": check only; else write the GGUF here (atomically)
  uint64_t max_output = UINT64_MAX;  // refuse bundles that declare a larger GGUF
};

// Streams a bundle: checks the frame and manifest, decompresses, hashes every
// segment as it completes. Unpacking (out_path set) stops at the first
// problem with BRISK_ERR_CHECKSUM / BRISK_ERR_BAD_FORMAT and leaves no file;
// checking collects every segment that differs into the result. On success
// the GGUF's own embedded manifest is also checked against the bundle's.
VerifyResult read_bundle(ByteSource& src, const ReadOptions& options, const Job& job);

void unpack(const std::string& bundle_path, const std::string& out_path, const Job& job);
VerifyResult verify_bundle(const std::string& bundle_path, const Job& job);

}  // namespace brisk::bundle
