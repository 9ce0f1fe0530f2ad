// SPDX-License-Identifier: MIT
// GGUF v3 writer. Metadata and tensor descriptions are collected first; then
// write() streams the header and asks for each tensor's bytes in turn, so a
// converter or quantizer holds one tensor in memory at a time. Output goes to
// a temporary file beside the target, renamed into place only when complete.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/atomic_file.h"
#include "core/tensor_type.h"
#include "gguf/gguf.h"

namespace brisk::gguf {

class Writer {
 public:
  void set_alignment(uint32_t alignment);  // power of two; default 32

  void add_string(const std::string& key, const std::string& value);
  void add_u32(const std::string& key, uint32_t value);
  void add_i32(const std::string& key, int32_t value);
  void add_u64(const std::string& key, uint64_t value);
  void add_f32(const std::string& key, float value);
  void add_bool(const std::string& key, bool value);
  void add_strings(const std::string& key, const std::vector<std::string>& values);
  void add_f32s(const std::string& key, const std::vector<float>& values);
  void add_i32s(const std::string& key, const std::vector<int32_t>& values);
  // Copies a value read from another file (any type, arrays included).
  void add_value(const std::string& key, const Value& value);
  bool has_key(const std::string& key) const;

  // ne[0] is the row length. Returns the tensor's index.
  size_t add_tensor(const std::string& name, TensorType type, const std::vector<int64_t>& ne);

  // Called once per tensor, in order; must write exactly the tensor's bytes via `write`.
  using Sink = std::function<void(const void* data, size_t n)>;
  using Producer = std::function<void(size_t tensor_index, const Sink& write)>;
  // Called after the last tensor, before the rename: may read the complete
  // temporary file and patch bytes in place (checksums known only at the end).
  using Finish = std::function<void(AtomicFile& file)>;
  // Writes the file atomically (temporary file + rename); on any failure the
  // target is left untouched and the temporary file removed.
  void write(const std::string& path, const Producer& produce, const Finish& finish = nullptr) const;

  // Header bytes (magic .. tensor infos), for hashing without a file.
  std::string header_bytes() const;
  uint64_t tensor_bytes(size_t index) const { return tensors_[index].n_bytes; }
  size_t n_tensors() const { return tensors_.size(); }

 private:
  struct TensorEntry {
    std::string name;
    TensorType type;
    std::vector<int64_t> ne;
    uint64_t n_bytes;
    uint64_t offset;
  };
  void begin_kv(const std::string& key, ValueType type);
  std::string kv_;
  uint64_t n_kv_ = 0;
  std::vector<std::string> keys_;
  std::vector<TensorEntry> tensors_;
  uint64_t data_size_ = 0;
  uint32_t alignment_ = 32;
};

}  // namespace brisk::gguf
