// SPDX-License-Identifier: MIT
// Anonymous memory for large buffers the kernels stream through (repacked
// weights, the KV cache, the bandwidth probe): aligned to 2 MB and advised for
// transparent huge pages, so the TLB covers it with a few entries and the
// pages are zero when first touched.
#pragma once
#include <cstddef>
#include <cstdint>

namespace brisk {

class HugePageBuffer {
 public:
  HugePageBuffer() = default;
  // At least `bytes` bytes (0: no memory). Fails with BRISK_ERR_OUT_OF_MEMORY
  // and a message naming `what` when the mapping cannot be made.
  HugePageBuffer(size_t bytes, const char* what);
  ~HugePageBuffer();
  HugePageBuffer(HugePageBuffer&& o) noexcept;
  HugePageBuffer& operator=(HugePageBuffer&& o) noexcept;
  HugePageBuffer(const HugePageBuffer&) = delete;
  HugePageBuffer& operator=(const HugePageBuffer&) = delete;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void release() noexcept;
  void* map_ = nullptr;  // the mapping, a little larger than data_ for the alignment
  size_t map_bytes_ = 0;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace brisk
