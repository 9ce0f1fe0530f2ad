// SPDX-License-Identifier: MIT
// The checksum manifest that brisk embeds in every GGUF it writes (the key
// names and exact hashing rules are documented in docs/manifest.md).
//
// Writing: write_with_manifest() adds the manifest keys with placeholder
// hashes, hashes each tensor while it streams to disk, then patches the
// fixed-size hex strings in the header before the atomic rename. So a
// converter produces each tensor once and holds one tensor in memory.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bundle/hash.h"
#include "gguf/gguf.h"
#include "gguf/writer.h"

namespace brisk::bundle {

inline constexpr const char* kManifestPrefix = "brisk.manifest.";
inline constexpr const char* kKeyVersion = "brisk.manifest.version";
inline constexpr const char* kKeyAlgorithm = "brisk.manifest.algorithm";
inline constexpr const char* kKeyTool = "brisk.manifest.tool";
inline constexpr const char* kKeySourceHash = "brisk.manifest.source_hash";
inline constexpr const char* kKeyMetadataHash = "brisk.manifest.metadata_hash";
inline constexpr const char* kKeyTensorHashes = "brisk.manifest.tensor_hashes";
inline constexpr uint32_t kManifestVersion = 1;
inline constexpr const char* kAlgorithm = "xxh3-128";

struct Manifest {
  uint32_t version = 0;
  std::string tool;
  Hash128 source_hash, metadata_hash;
  std::vector<Hash128> tensor_hashes;  // in the file's tensor order
  // File offsets of the recorded hex strings (for patching and hashing).
  uint64_t source_hash_offset = 0, metadata_hash_offset = 0;
  std::vector<uint64_t> tensor_hash_offsets;
};

// nullopt when the file has no manifest (no brisk.manifest.version key).
// A manifest that is present but damaged (wrong types, counts, not hex)
// throws BRISK_ERR_CHECKSUM; a newer manifest version BRISK_ERR_UNSUPPORTED.
std::optional<Manifest> read_manifest(const gguf::File& file);

// The metadata hash: XXH3-128 of header bytes [0, header_end) except the 32
// bytes at skip_offset (the recorded metadata hash itself).
Hash128 metadata_hash(const uint8_t* header, uint64_t header_end, uint64_t skip_offset);

// "brisk 0.1.0 convert": who wrote a file, for brisk.manifest.tool.
std::string tool_string(const std::string& command);

// Appends the manifest keys with placeholder hashes, one per tensor added
// so far: call after the last add_tensor. Writers that predict their file
// size call it on their prediction writer too (the keys' size is fixed).
void add_manifest_keys(gguf::Writer& w, const std::string& tool);

// Writes `w` to `path` atomically with a manifest appended to its metadata
// (added here unless add_manifest_keys already did). source_hash is called
// once every tensor has been produced (a streaming converter hashes its
// input as it reads it).
void write_with_manifest(gguf::Writer& w, const std::string& path, const gguf::Writer::Producer& produce,
                         const std::string& tool, const std::function<Hash128()>& source_hash);

}  // namespace brisk::bundle
