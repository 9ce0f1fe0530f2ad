// SPDX-License-Identifier: MIT
#include "model/identity.h"

#include <algorithm>
#include <cstdint>

#include "bundle/hash.h"

namespace brisk {

std::string model_identity(const gguf::File& file) {
  bundle::Hasher h;
  const uint8_t* p = file.file_data();
  const uint64_t size = file.file_size();
  h.update(&size, sizeof size);
  if (!p || size == 0) return h.digest().hex();
  const uint64_t header = std::min<uint64_t>(file.header_end(), size);
  h.update(p, static_cast<size_t>(header));
  const uint64_t begin = std::min<uint64_t>(file.data_offset(), size);
  const uint64_t span = size - begin;
  constexpr uint64_t kBlock = 4096, kSamples = 64;
  for (uint64_t i = 0; i < kSamples && span > 0; ++i) {
    const uint64_t at = begin + (span > kBlock ? (span - kBlock) * i / (kSamples - 1) : 0);
    h.update(p + at, static_cast<size_t>(std::min(kBlock, size - at)));
  }
  return h.digest().hex();
}

}  // namespace brisk
