// SPDX-License-Identifier: MIT
// Reading .brisk bundles: every byte of the GGUF is hashed as it leaves the
// decompressor, segment by segment, and compared with the bundle manifest
// before anything is renamed into place.
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <optional>

#include "bundle/manifest.h"
#include "bundle/pack.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "gguf/gguf.h"

namespace brisk::bundle {

namespace {

class FileSource : public ByteSource {
 public:
  explicit FileSource(const std::string& path) : path_(path), f_(std::fopen(path.c_str(), "rb")) {
    if (!f_)
      fail(errno == ENOENT ? BRISK_ERR_NOT_FOUND : BRISK_ERR_IO, "cannot open '" + path + "': " + std::strerror(errno));
  }
  ~FileSource() override { std::fclose(f_); }
  size_t read(void* buf, size_t n) override {
    size_t k = std::fread(buf, 1, n, f_);
    if (k < n && std::ferror(f_)) fail(BRISK_ERR_IO, "reading '" + path_ + "' failed: " + std::strerror(errno));
    return k;
  }
  std::string name() const override { return path_; }

 private:
  std::string path_;
  FILE* f_;
};

// "'name'" built piecewise: GCC 12 warns falsely (-Wrestrict) on "'" + string&&.
std::string quoted(const ByteSource& src) {
  std::string s("'");
  s += src.name();
  s += '\'';
  return s;
}

struct DCtxFree {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

template <class T>
T get(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Reads exactly n bytes or fails with a "truncated" message.
void read_exact(ByteSource& src, void* buf, size_t n, const std::string& what) {
  size_t got = 0;
  while (got < n) {
    size_t k = src.read(static_cast<char*>(buf) + got, n - got);
    if (k == 0) fail(BRISK_ERR_BAD_FORMAT, quoted(src) + ": truncated bundle (" + what + ")");
    got += k;
  }
}

BundleManifest read_head(ByteSource& src, uint64_t max_output) {
  uint8_t head[kBundleHeaderSize];
  read_exact(src, head, sizeof head, "frame header");
  if (std::memcmp(head, kBundleMagic, 8) != 0) fail(BRISK_ERR_BAD_FORMAT, quoted(src) + " is not a brisk bundle (bad magic)");
  const uint32_t version = get<uint32_t>(head + 8), flags = get<uint32_t>(head + 12);
  if (version != kBundleVersion)
    fail(BRISK_ERR_UNSUPPORTED, quoted(src) + ": bundle format version " + std::to_string(version) +
                                    " is not supported (this brisk reads version 1)");
  if (flags != 0) fail(BRISK_ERR_UNSUPPORTED, quoted(src) + ": unknown bundle flags " + std::to_string(flags));
  const uint64_t msize = get<uint64_t>(head + 16);
  if (msize == 0 || msize > kMaxManifestSize)
    fail(BRISK_ERR_BAD_FORMAT, quoted(src) + ": manifest size " + std::to_string(msize) + " is out of range");
  std::string json(static_cast<size_t>(msize), '\0');
  read_exact(src, json.data(), json.size(), "manifest");
  Hash128 want;
  std::memcpy(want.bytes, head + 24, 16);
  if (hash_bytes(json.data(), json.size()) != want)
    fail(BRISK_ERR_CHECKSUM, quoted(src) + ": the bundle manifest does not match its checksum (damaged)");
  BundleManifest m = BundleManifest::from_json(json);
  if (m.gguf_size > max_output)
    fail(BRISK_ERR_UNSUPPORTED, quoted(src) + ": declares a " + std::to_string(m.gguf_size) +
                                    "-byte model, above the limit of " + std::to_string(max_output));
  return m;
}

// After a successful stream: the GGUF's own manifest must agree with the
// bundle's (same tensor hashes at the same offsets, and a matching metadata
// hash), so what unpack writes also passes `brisk verify`.
void check_embedded(const std::string& path, const BundleManifest& m, std::vector<Problem>& problems) {
  gguf::File f(path);
  std::optional<Manifest> em = read_manifest(f);
  if (!em) {
    if (m.gguf_manifest) problems.push_back({"manifest", "the bundle says the model embeds a manifest, but it has none"});
    return;
  }
  if (metadata_hash(f.file_data(), f.header_end(), em->metadata_hash_offset) != em->metadata_hash)
    problems.push_back({"metadata", "the unpacked header does not match its embedded metadata hash"});
  std::map<uint64_t, const Segment*> at;  // segments by offset (they do not overlap)
  for (const Segment& s : m.segments) at.emplace(s.offset, &s);
  for (size_t i = 0; i < f.tensors().size(); ++i) {
    const gguf::TensorInfo& t = f.tensors()[i];
    auto it = at.find(f.data_offset() + t.offset);
    if (it == at.end() || it->second->size != t.n_bytes || it->second->hash != em->tensor_hashes[i])
      problems.push_back({"tensor '" + t.name + "'", "embedded manifest and bundle manifest disagree"});
  }
}

}  // namespace

VerifyResult read_bundle(ByteSource& src, const ReadOptions& o, const Job& job) {
  const BundleManifest m = read_head(src, o.max_output);
  const bool unpacking = !o.out_path.empty();
  std::optional<AtomicFile> out;
  if (unpacking) out.emplace(o.out_path);
  VerifyResult r;
  r.has_manifest = true;

  std::unique_ptr<ZSTD_DCtx, DCtxFree> d(ZSTD_createDCtx());
  if (!d) throw std::bad_alloc();
  ZSTD_DCtx_setParameter(d.get(), ZSTD_d_windowLogMax, kMaxWindowLog);
  std::vector<uint8_t> in(ZSTD_DStreamInSize()), obuf(ZSTD_DStreamOutSize());
  size_t seg = 0;
  uint64_t seg_left = m.segments[0].size, total = 0;
  Hasher hasher;
  auto consume = [&](const uint8_t* p, size_t n) {
    if (n > m.gguf_size - total)
      fail(BRISK_ERR_BAD_FORMAT, quoted(src) + ": decompresses to more than the " + std::to_string(m.gguf_size) +
                                     " bytes its manifest declares");
    if (out) out->write(p, n);
    total += n;
    while (n > 0) {
      const size_t k = static_cast<size_t>(std::min<uint64_t>(n, seg_left));
      hasher.update(p, k);
      p += k;
      n -= k;
      seg_left -= k;
      if (seg_left > 0) break;
      const Segment& s = m.segments[seg];
      const Hash128 got = hasher.digest();
      if (got != s.hash) {
        const std::string detail = "bytes [" + std::to_string(s.offset) + ", " + std::to_string(s.offset + s.size) +
                                   ") hash to " + got.hex() + ", recorded " + s.hash.hex();
        if (unpacking) fail(BRISK_ERR_CHECKSUM, quoted(src) + " is damaged: " + s.name + ": " + detail);
        r.problems.push_back({s.name, detail});
      }
      hasher.reset();
      if (++seg < m.segments.size()) seg_left = m.segments[seg].size;
    }
  };

  size_t ret = 1;  // 0 once a frame is complete
  for (;;) {
    job.check_cancel();
    const size_t n = src.read(in.data(), in.size());
    if (n == 0) break;
    ZSTD_inBuffer input{in.data(), n, 0};
    ZSTD_outBuffer output{};
    do {
      output = {obuf.data(), obuf.size(), 0};
      ret = ZSTD_decompressStream(d.get(), &output, &input);
      if (ZSTD_isError(ret))
        fail(BRISK_ERR_BAD_FORMAT, quoted(src) + ": damaged compressed data after " + std::to_string(total) +
                                       " bytes (" + ZSTD_getErrorName(ret) + ")");
      consume(obuf.data(), output.pos);
    } while (input.pos < input.size || output.pos == output.size);
    job.report(static_cast<double>(total) / static_cast<double>(m.gguf_size), unpacking ? "unpacking" : "verifying");
  }
  if (ret != 0 || total != m.gguf_size)
    fail(BRISK_ERR_BAD_FORMAT, quoted(src) + ": truncated bundle (" + std::to_string(total) + " of " +
                                   std::to_string(m.gguf_size) + " bytes decompressed)");
  r.bytes_hashed = total;
  if (unpacking) {
    out->flush();
    check_embedded(out->temp_path(), m, r.problems);
    if (!r.problems.empty())
      fail(BRISK_ERR_CHECKSUM, quoted(src) + ": " + r.problems[0].where + ": " + r.problems[0].detail);
    out->commit();
  }
  return r;
}

void unpack(const std::string& bundle_path, const std::string& out_path, const Job& job) {
  if (out_path.empty()) fail(BRISK_ERR_INVALID_ARGUMENT, "unpack needs an output path");
  FileSource src(bundle_path);
  ReadOptions o;
  o.out_path = out_path;
  read_bundle(src, o, job);
}

VerifyResult verify_bundle(const std::string& bundle_path, const Job& job) {
  FileSource src(bundle_path);
  return read_bundle(src, ReadOptions{}, job);
}

}  // namespace brisk::bundle
