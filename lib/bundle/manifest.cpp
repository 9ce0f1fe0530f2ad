// SPDX-License-Identifier: MIT
#include "bundle/manifest.h"

#include <cstring>

#include "core/error.h"

namespace brisk::bundle {

namespace {

[[noreturn]] void damaged(const gguf::File& f, const std::string& what) {
  fail(BRISK_ERR_CHECKSUM, "'" + f.path() + "': manifest damaged: " + what);
}

const gguf::Value& need(const gguf::File& f, const char* key, gguf::ValueType type) {
  const gguf::Value* v = f.find(key);
  if (!v) damaged(f, std::string("key '") + key + "' is missing");
  if (v->type != type)
    damaged(f, std::string("key '") + key + "' has type " + gguf::value_type_name(v->type) + ", expected " +
                   gguf::value_type_name(type));
  return *v;
}

// A recorded hash and where its text sits in the file.
Hash128 parse_hash(const gguf::File& f, const gguf::Value& v, const std::string& what, uint64_t* offset) {
  auto h = Hash128::from_hex(v.str);
  if (!h) damaged(f, what + " is not " + std::to_string(kHashHexLen) + " lower-case hex digits");
  *offset = static_cast<uint64_t>(reinterpret_cast<const uint8_t*>(v.str.data()) - f.file_data());
  return *h;
}

}  // namespace

std::optional<Manifest> read_manifest(const gguf::File& f) {
  const gguf::Value* ver = f.find(kKeyVersion);
  if (!ver) return std::nullopt;
  if (ver->type != gguf::ValueType::UINT32) damaged(f, std::string("key '") + kKeyVersion + "' is not a uint32");
  Manifest m;
  m.version = static_cast<uint32_t>(ver->u);
  if (m.version != kManifestVersion)
    fail(BRISK_ERR_UNSUPPORTED, "'" + f.path() + "': manifest version " + std::to_string(m.version) +
                                    " is not supported (this brisk reads version " +
                                    std::to_string(kManifestVersion) + ")");
  if (need(f, kKeyAlgorithm, gguf::ValueType::STRING).str != kAlgorithm)
    damaged(f, std::string("unknown hash algorithm (expected ") + kAlgorithm + ")");
  m.tool = std::string(need(f, kKeyTool, gguf::ValueType::STRING).str);
  m.source_hash = parse_hash(f, need(f, kKeySourceHash, gguf::ValueType::STRING), "source hash", &m.source_hash_offset);
  m.metadata_hash =
      parse_hash(f, need(f, kKeyMetadataHash, gguf::ValueType::STRING), "metadata hash", &m.metadata_hash_offset);
  const gguf::Value& arr = need(f, kKeyTensorHashes, gguf::ValueType::ARRAY);
  if (arr.elem_type != gguf::ValueType::STRING) damaged(f, "tensor hashes are not strings");
  if (arr.items.size() != f.tensors().size())
    damaged(f, std::to_string(arr.items.size()) + " tensor hashes for " + std::to_string(f.tensors().size()) +
                   " tensors");
  m.tensor_hashes.resize(arr.items.size());
  m.tensor_hash_offsets.resize(arr.items.size());
  for (size_t i = 0; i < arr.items.size(); ++i)
    m.tensor_hashes[i] = parse_hash(f, arr.items[i], "hash of tensor '" + f.tensors()[i].name + "'",
                                    &m.tensor_hash_offsets[i]);
  if (m.metadata_hash_offset + kHashHexLen > f.header_end()) damaged(f, "metadata hash lies outside the header");
  return m;
}

Hash128 metadata_hash(const uint8_t* header, uint64_t header_end, uint64_t skip) {
  Hasher h;
  h.update(header, static_cast<size_t>(skip));
  h.update(header + skip + kHashHexLen, static_cast<size_t>(header_end - skip - kHashHexLen));
  return h.digest();
}

std::string tool_string(const std::string& command) { return std::string("brisk ") + BRISK_VERSION_STRING + " " + command; }

void add_manifest_keys(gguf::Writer& w, const std::string& tool) {
  const std::string placeholder(kHashHexLen, '0');
  w.add_u32(kKeyVersion, kManifestVersion);
  w.add_string(kKeyAlgorithm, kAlgorithm);
  w.add_string(kKeyTool, tool);
  w.add_string(kKeySourceHash, placeholder);
  w.add_string(kKeyMetadataHash, placeholder);
  w.add_strings(kKeyTensorHashes, std::vector<std::string>(w.n_tensors(), placeholder));
}

void write_with_manifest(gguf::Writer& w, const std::string& path, const gguf::Writer::Producer& produce,
                         const std::string& tool, const std::function<Hash128()>& source_hash) {
  if (!w.has_key(kKeyVersion)) add_manifest_keys(w, tool);

  std::vector<Hash128> hashes(w.n_tensors());
  Hasher hasher;
  auto hashing = [&](size_t i, const gguf::Writer::Sink& sink) {
    hasher.reset();
    produce(i, [&](const void* p, size_t n) {
      hasher.update(p, n);
      sink(p, n);
    });
    hashes[i] = hasher.digest();
  };
  w.write(path, hashing, [&](AtomicFile& out) {
    // Read the manifest back from the finished temporary file: this also
    // checks that what was written parses, and gives the exact offsets.
    out.flush();
    std::string header;
    Manifest m;
    {
      gguf::File tmp(out.temp_path());
      auto read = read_manifest(tmp);
      if (!read || read->tensor_hashes.size() != hashes.size())
        fail(BRISK_ERR_INTERNAL, "write_with_manifest: the written manifest does not read back");
      m = std::move(*read);
      header.assign(reinterpret_cast<const char*>(tmp.file_data()), static_cast<size_t>(tmp.header_end()));
    }
    auto put = [&](uint64_t off, const Hash128& h) { header.replace(static_cast<size_t>(off), kHashHexLen, h.hex()); };
    for (size_t i = 0; i < hashes.size(); ++i) put(m.tensor_hash_offsets[i], hashes[i]);
    put(m.source_hash_offset, source_hash ? source_hash() : Hash128{});
    // Last: the metadata hash covers every other header byte, the hashes above included.
    put(m.metadata_hash_offset, metadata_hash(reinterpret_cast<const uint8_t*>(header.data()), header.size(),
                                              m.metadata_hash_offset));
    out.patch(0, header.data(), header.size());
  });
}

}  // namespace brisk::bundle
