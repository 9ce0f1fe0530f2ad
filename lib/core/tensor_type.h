// SPDX-License-Identifier: MIT
// GGML tensor types as stored in GGUF (ids are ggml's and never change), with
// their block geometry. Only types brisk can compute with are "supported";
// the rest are still known by name so errors can say what a file contains.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace brisk {

enum class TensorType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  BF16 = 30,
};

struct TypeTraits {
  const char* name;     // ggml's lower-case name, e.g. "q4_k"
  uint32_t block_size;  // weights per block (1 for plain types)
  uint32_t type_size;   // bytes per block
  bool known;           // a type id ggml defines (so the file is not garbage)
  bool supported;       // brisk can compute with it
};

// Traits for a raw type id; unknown ids give known=false.
const TypeTraits& type_traits(uint32_t id);
inline const TypeTraits& type_traits(TensorType t) { return type_traits(static_cast<uint32_t>(t)); }
inline const char* type_name(TensorType t) { return type_traits(t).name; }

// Bytes of one row of n elements; n must be a multiple of the block size.
inline size_t row_bytes(TensorType t, int64_t n) {
  const TypeTraits& tr = type_traits(t);
  return static_cast<size_t>(n / tr.block_size) * tr.type_size;
}

// Parses "q4_0", "Q8_0", "f16", ... Returns false if unknown.
bool parse_type_name(const std::string& s, TensorType* out);

}  // namespace brisk
