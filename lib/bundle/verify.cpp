// SPDX-License-Identifier: MIT
#include "bundle/verify.h"

#include <algorithm>
#include <numeric>

#include "bundle/manifest.h"
#include "bundle/parallel.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "gguf/writer.h"

namespace brisk::bundle {

namespace {

constexpr size_t kChunk = size_t(8) << 20;  // hash in pieces so cancel and progress stay responsive

// First non-zero byte in [begin, end) of the file, or end.
uint64_t first_nonzero(const gguf::File& f, uint64_t begin, uint64_t end) {
  const uint8_t* p = f.file_data();
  for (uint64_t i = begin; i < end; ++i)
    if (p[i] != 0) return i;
  return end;
}

// Every byte outside the header and the tensors must be zero padding;
// otherwise a flipped padding byte would go unnoticed.
void check_padding(const gguf::File& f, std::vector<Problem>& problems) {
  std::vector<const gguf::TensorInfo*> ts;
  for (const gguf::TensorInfo& t : f.tensors()) ts.push_back(&t);
  std::sort(ts.begin(), ts.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  uint64_t pos = f.header_end();
  std::string after = "the header";
  auto gap = [&](uint64_t end) {
    if (end <= pos) return;
    uint64_t bad = first_nonzero(f, pos, std::min<uint64_t>(end, f.file_size()));
    if (bad < std::min<uint64_t>(end, f.file_size()))
      problems.push_back({"padding", "non-zero byte at file offset " + std::to_string(bad) + " (padding after " +
                                         after + ")"});
  };
  for (const gguf::TensorInfo* t : ts) {
    const uint64_t begin = f.data_offset() + t->offset;
    gap(begin);
    pos = std::max(pos, begin + t->n_bytes);
    after = "tensor '" + t->name + "'";
  }
  gap(f.file_size());
}

}  // namespace

std::string VerifyResult::summary() const {
  if (!has_manifest) return "no manifest";
  if (problems.empty()) return "OK";
  std::string s;
  for (const Problem& p : problems) s += p.where + ": " + p.detail + "\n";
  return s;
}

std::vector<Hash128> hash_tensors(const gguf::File& f, const Job& job, uint64_t* bytes, bool keep_mapped) {
  const auto& ts = f.tensors();
  // Largest first, so one big tensor does not start last and run alone.
  std::vector<size_t> order(ts.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ts[a].n_bytes > ts[b].n_bytes; });
  uint64_t total = 0;
  for (const auto& t : ts) total += t.n_bytes;
  std::vector<Hash128> out(ts.size());
  parallel_for(order.size(), job.threads(), job, total, 0.0, 1.0, "hashing tensors", [&](size_t k, TaskState& st) {
    const gguf::TensorInfo& t = ts[order[k]];
    Hasher h;
    for (uint64_t off = 0; off < t.n_bytes && !st.stop; off += kChunk) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, t.n_bytes - off));
      h.update(t.data + off, n);
      if (!keep_mapped) f.release(t.data + off, n);
      st.done += n;
    }
    out[order[k]] = h.digest();
  });
  if (bytes) *bytes = total;
  return out;
}

VerifyResult verify_gguf(const gguf::File& f, const Job& job, bool keep_mapped) {
  VerifyResult r;
  std::optional<Manifest> m;
  try {
    m = read_manifest(f);
  } catch (const Error& e) {
    if (e.code() != BRISK_ERR_CHECKSUM) throw;
    r.has_manifest = true;
    r.problems.push_back({"manifest", e.what()});
    return r;
  }
  if (!m) return r;
  r.has_manifest = true;
  const Hash128 mh = metadata_hash(f.file_data(), f.header_end(), m->metadata_hash_offset);
  if (mh != m->metadata_hash)
    r.problems.push_back({"metadata", "header bytes [0, " + std::to_string(f.header_end()) + ") hash to " + mh.hex() +
                                          ", recorded " + m->metadata_hash.hex()});
  r.tensor_hashes = hash_tensors(f, job, &r.bytes_hashed, keep_mapped);
  const std::vector<Hash128>& got = r.tensor_hashes;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] == m->tensor_hashes[i]) continue;
    const gguf::TensorInfo& t = f.tensors()[i];
    r.problems.push_back({"tensor '" + t.name + "'",
                          "data at file offset " + std::to_string(f.data_offset() + t.offset) + " (" +
                              std::to_string(t.n_bytes) + " bytes) hashes to " + got[i].hex() + ", recorded " +
                              m->tensor_hashes[i].hex()});
  }
  check_padding(f, r.problems);
  return r;
}

void verify_gguf_or_throw(const gguf::File& f, const Job& job) {
  VerifyResult r = verify_gguf(f, job, /*keep_mapped=*/true);
  if (!r.has_manifest)
    fail(BRISK_ERR_NOT_FOUND, "'" + f.path() + "' has no brisk checksum manifest to verify against "
                                               "(add one with 'brisk verify --add-manifest')");
  if (r.problems.empty()) return;
  std::string msg = "'" + f.path() + "' does not match its checksums: ";
  for (size_t i = 0; i < r.problems.size() && i < 3; ++i)
    msg += (i ? "; " : "") + r.problems[i].where + ": " + r.problems[i].detail;
  if (r.problems.size() > 3) msg += "; and " + std::to_string(r.problems.size() - 3) + " more";
  fail(BRISK_ERR_CHECKSUM, msg);
}

void add_manifest(const std::string& in, const std::string& out, const Job& job, const MapOptions& input) {
  gguf::File f(in, input);
  if (read_manifest(f)) verify_gguf_or_throw(f, job);  // refuse to bless damage
  gguf::Writer w;
  for (const auto& [key, value] : f.metadata())
    if (key.rfind(kManifestPrefix, 0) != 0) w.add_value(key, value);
  // Keep the file's alignment without adding a general.alignment key it did not have.
  if (f.find("general.alignment")) w.set_alignment(static_cast<uint32_t>(f.alignment()));
  for (const gguf::TensorInfo& t : f.tensors())
    w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims));
  uint64_t total = 0, done = 0;
  for (const auto& t : f.tensors()) total += t.n_bytes;
  write_with_manifest(
      w, out,
      [&](size_t i, const gguf::Writer::Sink& sink) {
        job.check_cancel();
        const gguf::TensorInfo& t = f.tensors()[i];
        sink(t.data, t.n_bytes);
        done += t.n_bytes;
        job.report(total ? 0.9 * static_cast<double>(done) / static_cast<double>(total) : 0.9, "copying tensors");
      },
      tool_string("verify --add-manifest"), [&] {
        job.report(0.9, "hashing the source file");
        return hash_bytes(f.file_data(), f.file_size());
      });
  job.report(1.0, "done");
}

}  // namespace brisk::bundle
