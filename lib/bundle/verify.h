// SPDX-License-Identifier: MIT
// Checking a GGUF file against its embedded manifest, and adding a manifest
// to a file that has none.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "bundle/hash.h"
#include "bundle/job.h"
#include "gguf/gguf.h"

namespace brisk::bundle {

// One place where the file differs from what its manifest recorded.
struct Problem {
  std::string where;   // "tensor 'blk.0.attn_q.weight'", "metadata", "padding", "manifest"
  std::string detail;  // what differs, with offsets
};

struct VerifyResult {
  bool has_manifest = false;
  std::vector<Problem> problems;
  uint64_t bytes_hashed = 0;
  std::vector<Hash128> tensor_hashes;  // as computed, in tensor order (empty without a manifest)
  bool ok() const { return has_manifest && problems.empty(); }
  // "OK", "no manifest", or the problems one per line.
  std::string summary() const;
};

// XXH3-128 of every tensor's data, hashed on job.threads() threads (tensors
// are shared out largest first). bytes (optional) receives the bytes hashed.
// Unless keep_mapped, pages are released once hashed (release_pages) so
// checking a large file does not fill this process's resident memory; a
// model about to run keeps them.
std::vector<Hash128> hash_tensors(const gguf::File& file, const Job& job, uint64_t* bytes = nullptr,
                                  bool keep_mapped = false);

// Recomputes the manifest's checksums: the metadata hash, every tensor hash,
// and that all padding between the header and the tensors is zero, so any
// changed byte is found and named. A file without a manifest gives
// has_manifest = false and no problems.
VerifyResult verify_gguf(const gguf::File& file, const Job& job = {}, bool keep_mapped = false);

// For brisk_model_open(verify=1): throws BRISK_ERR_CHECKSUM naming what
// differs, BRISK_ERR_NOT_FOUND when there is no manifest to check against.
// Keeps the pages mapped (the model is about to use them).
void verify_gguf_or_throw(const gguf::File& file, const Job& job = {});

// Rewrites `in` (atomically, to `out`; out may equal in) with a fresh
// manifest; its source hash is the XXH3-128 of the whole input file. A file
// whose existing manifest does not verify is refused (BRISK_ERR_CHECKSUM):
// re-hashing it would bless the damage. `input`: how `in` is brought in.
void add_manifest(const std::string& in, const std::string& out, const Job& job = {}, const MapOptions& input = {});

}  // namespace brisk::bundle
