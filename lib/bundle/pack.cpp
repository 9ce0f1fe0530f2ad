// SPDX-License-Identifier: MIT
// Packing and unpacking .brisk bundles (layout in pack.h, docs/manifest.md).
#include "bundle/pack.h"

// ZSTD_getCParams (the window a level uses) is in the "experimental" part
// of the API; libzstd.so exports it.
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>

#include "bundle/manifest.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "gguf/gguf.h"

namespace brisk::bundle {

namespace {

constexpr size_t kInChunk = size_t(4) << 20;

template <class T>
void put(std::string& s, T v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof v);
}

struct CCtxFree {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};

void zcheck(size_t r, const char* what) {
  if (ZSTD_isError(r)) fail(BRISK_ERR_INTERNAL, std::string("zstd: ") + what + ": " + ZSTD_getErrorName(r));
}

// The segments of a GGUF file: header (with its padding), tensors in file
// order, and the padding between them, tiling [0, size) exactly.
std::vector<Segment> layout(const gguf::File& f, const std::vector<Hash128>& tensor_hashes) {
  std::vector<size_t> order(f.tensors().size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return f.tensors()[a].offset < f.tensors()[b].offset; });
  std::vector<Segment> segs;
  auto raw = [&](const std::string& name, uint64_t begin, uint64_t end) {
    if (end > begin) segs.push_back({name, begin, end - begin, hash_bytes(f.file_data() + begin, end - begin)});
  };
  raw("header", 0, std::min<uint64_t>(f.data_offset(), f.file_size()));
  uint64_t pos = std::min<uint64_t>(f.data_offset(), f.file_size());
  for (size_t i : order) {
    const gguf::TensorInfo& t = f.tensors()[i];
    const uint64_t begin = f.data_offset() + t.offset;
    if (begin < pos) fail(BRISK_ERR_UNSUPPORTED, "'" + f.path() + "': tensor '" + t.name + "' overlaps another; cannot pack");
    raw("padding", pos, begin);
    segs.push_back({"tensor '" + t.name + "'", begin, t.n_bytes, tensor_hashes[i]});
    pos = begin + t.n_bytes;
  }
  raw("padding", pos, f.file_size());
  return segs;
}

// How far back zstd must look to reach a repeat: over tensors of 64 KiB or
// more whose data hash the same, the largest distance from the start of the
// first copy to the end of a later one. 0 if no tensor is stored twice.
uint64_t duplicate_span(const std::vector<Segment>& segs) {
  std::map<std::pair<std::string, uint64_t>, uint64_t> first;  // (hash, size) -> offset
  uint64_t span = 0;
  for (const Segment& s : segs) {
    if (s.size < (uint64_t(64) << 10) || s.name.rfind("tensor", 0) != 0) continue;
    auto [it, fresh] = first.emplace(std::make_pair(s.hash.hex(), s.size), s.offset);
    if (!fresh) span = std::max(span, s.offset + s.size - it->second);
  }
  return span;
}

}  // namespace

bool is_bundle(const std::string& path) {
  FILE* fp = std::fopen(path.c_str(), "rb");
  if (!fp) return false;
  char m[8] = {};
  const bool yes = std::fread(m, 1, 8, fp) == 8 && std::memcmp(m, kBundleMagic, 8) == 0;
  std::fclose(fp);
  return yes;
}

void pack(const std::string& in, const std::string& out, const PackOptions& o, const Job& job) {
  if (o.level < 1 || o.level > ZSTD_maxCLevel())
    fail(BRISK_ERR_INVALID_ARGUMENT, "compression level " + std::to_string(o.level) + " is outside 1.." +
                                         std::to_string(ZSTD_maxCLevel()));
  gguf::File f(in, o.input);
  Job hashing = job;  // the checksum pass is the first 30% of the work
  hashing.progress = [&](double x, const std::string& w) { job.report(0.3 * x, w); };
  BundleManifest m;
  m.tool = tool_string("pack");
  m.gguf_size = f.file_size();
  std::vector<Hash128> hashes;
  if (read_manifest(f)) {
    VerifyResult r = verify_gguf(f, hashing);
    if (!r.problems.empty())
      fail(BRISK_ERR_CHECKSUM, "'" + in + "' does not match its checksums (" + r.problems[0].where + ": " +
                                   r.problems[0].detail + "); refusing to pack a damaged file");
    hashes = std::move(r.tensor_hashes);
    m.gguf_manifest = true;
  } else {
    job.warning("'" + in + "' has no embedded manifest; the bundle carries its own checksums");
    hashes = hash_tensors(f, hashing);
  }
  m.segments = layout(f, hashes);

  std::unique_ptr<ZSTD_CCtx, CCtxFree> cctx(ZSTD_createCCtx());
  if (!cctx) throw std::bad_alloc();
  zcheck(ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, o.level), "level");
  // Long-distance matching only pays where the file repeats itself farther
  // back than the level's window: on random-looking weights it saves nothing
  // and costs much more CPU. The tensor hashes
  // say exactly when it pays: the same data stored twice (an untied output
  // equal to the embeddings, a tensor copied into a second file section).
  const ZSTD_compressionParameters cp = ZSTD_getCParams(o.level, f.file_size(), 0);
  const uint64_t span = duplicate_span(m.segments);
  const uint64_t reach = o.long_distance > 0 ? f.file_size() : span;
  m.long_distance = o.long_distance > 0 || (o.long_distance < 0 && span > (uint64_t(1) << cp.windowLog) &&
                                            span <= (uint64_t(1) << kMaxWindowLog));
  m.level = o.level;
  if (m.long_distance) {
    int wlog = static_cast<int>(cp.windowLog);
    while (wlog < kMaxWindowLog && (uint64_t(1) << wlog) < reach) ++wlog;
    zcheck(ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_enableLongDistanceMatching, 1), "long distance matching");
    zcheck(ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_windowLog, wlog), "window log");
  }
  if (job.threads() > 1 && ZSTD_isError(ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_nbWorkers, job.threads())))
    job.warning("this libzstd has no multi-threading; compressing on one thread");
  zcheck(ZSTD_CCtx_setPledgedSrcSize(cctx.get(), f.file_size()), "pledged size");

  const std::string json = m.to_json();
  std::string head(kBundleMagic, 8);
  put<uint32_t>(head, kBundleVersion);
  put<uint32_t>(head, 0);
  put<uint64_t>(head, json.size());
  head.append(reinterpret_cast<const char*>(hash_bytes(json.data(), json.size()).bytes), 16);
  AtomicFile file(out);
  file.write(head.data(), head.size());
  file.write(json.data(), json.size());

  std::vector<char> buf(ZSTD_CStreamOutSize());
  const uint8_t* src = f.file_data();
  const uint64_t size = f.file_size();
  for (uint64_t pos = 0;;) {
    job.check_cancel();
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kInChunk, size - pos));
    const bool last = pos + n == size;
    ZSTD_inBuffer input{src + pos, n, 0};
    size_t remaining;
    do {
      ZSTD_outBuffer output{buf.data(), buf.size(), 0};
      remaining = ZSTD_compressStream2(cctx.get(), &output, &input, last ? ZSTD_e_end : ZSTD_e_continue);
      zcheck(remaining, "compress");
      file.write(buf.data(), output.pos);
    } while (last ? remaining != 0 : input.pos < input.size);
    f.release(src + pos, n);  // compressed: keep resident memory small
    pos += n;
    job.report(0.3 + 0.7 * static_cast<double>(pos) / static_cast<double>(std::max<uint64_t>(size, 1)), "compressing");
    if (last) break;
  }
  file.commit();
}

}  // namespace brisk::bundle
