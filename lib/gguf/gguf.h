// SPDX-License-Identifier: MIT
// GGUF reader (versions 2 and 3) over a memory-mapped file.
//
// Parsing validates everything up front: every count, length and offset is
// checked against the file size with overflow-safe arithmetic before it is
// used, so no byte sequence can make the reader crash or allocate more than a
// small multiple of the file's size. After construction the object is
// immutable; values and tensor data are views into the mapping.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/mapped_file.h"
#include "core/tensor_type.h"

namespace brisk::gguf {

enum class ValueType : uint32_t {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
};
const char* value_type_name(ValueType t);

// One metadata value. Scalars are decoded; strings and arrays are views into
// the mapped file (valid while the File lives).
struct Value {
  ValueType type = ValueType::UINT8;
  // Scalars: integers in i (signed) / u (unsigned), floats in f, bools in u.
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0;
  std::string_view str;  // STRING
  // ARRAY: element type and count; elements of fixed size are at `data`
  // (unaligned, little-endian); strings and nested arrays are decoded into
  // `items` since their sizes vary.
  ValueType elem_type = ValueType::UINT8;
  uint64_t count = 0;
  const uint8_t* data = nullptr;
  std::vector<Value> items;

  bool is_integer() const;
  bool is_float() const { return type == ValueType::FLOAT32 || type == ValueType::FLOAT64; }
  // Text for messages and `brisk_model_meta`.
  std::string to_string() const;
  // Array element access for fixed-size numeric elements (bounds checked).
  double number_at(uint64_t idx) const;
  int64_t integer_at(uint64_t idx) const;
};

struct TensorInfo {
  std::string name;
  uint32_t n_dims = 0;
  int64_t ne[4] = {1, 1, 1, 1};  // ne[0] is the row length (fastest varying)
  TensorType type = TensorType::F32;
  uint64_t offset = 0;    // relative to the data section
  uint64_t n_bytes = 0;
  const uint8_t* data = nullptr;  // into the mapping

  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  int64_t n_rows() const { return ne[1] * ne[2] * ne[3]; }
  std::string shape_string() const;
};

class File {
 public:
  // Opens and validates; throws brisk::Error with a one-line message naming
  // the file and the problem.
  explicit File(const std::string& path, const MapOptions& map = {});

  const std::string& path() const { return map_.path(); }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  size_t file_size() const { return map_.size(); }
  const uint8_t* file_data() const { return map_.data(); }
  const MapOptions& map_options() const { return map_.options(); }
  // Drops [p, p + n) of the file from resident memory where it can be read
  // back (MappedFile::release).
  void release(const void* p, size_t n) const { map_.release(p, n); }
  // Byte range [begin, end) of the header + metadata + tensor infos.
  uint64_t header_end() const { return header_end_; }

  const std::vector<std::pair<std::string, Value>>& metadata() const { return kv_; }
  const Value* find(std::string_view key) const;
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;

  // Typed accessors. The required forms throw "missing key" / "key has type X,
  // expected Y" errors; the optional forms return nullopt when absent but still
  // throw on a wrong type.
  std::string get_string(std::string_view key) const;
  std::optional<std::string> opt_string(std::string_view key) const;
  uint64_t get_uint(std::string_view key) const;
  std::optional<uint64_t> opt_uint(std::string_view key) const;
  std::optional<double> opt_float(std::string_view key) const;
  std::optional<bool> opt_bool(std::string_view key) const;
  // An array of the given element type (STRING arrays: items hold the strings).
  const Value& get_array(std::string_view key, ValueType elem) const;
  const Value* opt_array(std::string_view key, ValueType elem) const;

  [[noreturn]] void fail_format(const std::string& what) const;

 private:
  MappedFile map_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  uint64_t header_end_ = 0;
  std::vector<std::pair<std::string, Value>> kv_;
  std::unordered_map<std::string, size_t> kv_index_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;
};

}  // namespace brisk::gguf
