// SPDX-License-Identifier: MIT
// Reader for Hugging Face .safetensors files: an 8-byte little-endian header
// length N, N bytes of JSON describing every tensor (dtype, shape, byte range
// relative to the end of the header), then the raw data.
//
// The header comes from an untrusted file: its length is bounded by the file
// size and a cap, JSON errors become clear messages, and every tensor's dtype,
// shape and byte range are checked (range inside the data section, length =
// elements x dtype size, no overflow) before any data pointer is formed.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "core/tensor_type.h"

namespace brisk::convert {

inline constexpr uint64_t kMaxSafetensorsHeader = uint64_t(100) << 20;  // as the safetensors crate

struct StTensor {
  std::string name;
  std::string dtype;            // "F32", "BF16", ...
  uint32_t elem_size = 0;       // bytes per element
  std::vector<int64_t> shape;   // outermost first (PyTorch order)
  uint64_t begin = 0, end = 0;  // byte range relative to the data section
  const uint8_t* data = nullptr;

  int64_t n_elements() const;
  // The brisk tensor type for F32/F16/BF16; false for other dtypes.
  bool float_type(TensorType* out) const;
  std::string shape_string() const;
};

struct StHeader {
  std::vector<StTensor> tensors;  // sorted by data offset
  std::map<std::string, std::string> metadata;  // "__metadata__" (string values only)
  uint64_t data_start = 0;        // file offset of the data section
};

// Parses and validates a whole safetensors image; `name` is for messages.
// Throws brisk::Error(BRISK_ERR_BAD_FORMAT) naming the file and the problem.
StHeader parse_safetensors(const uint8_t* data, size_t size, const std::string& name);

// A memory-mapped .safetensors file.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path, const MapOptions& map = {});
  const std::string& path() const { return map_.path(); }
  const std::vector<StTensor>& tensors() const { return header_.tensors; }
  const StTensor* find(const std::string& name) const;

 private:
  MappedFile map_;
  StHeader header_;
  std::map<std::string, size_t> index_;
};

}  // namespace brisk::convert
