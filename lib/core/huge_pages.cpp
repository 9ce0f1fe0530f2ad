// SPDX-License-Identifier: MIT
#include "core/huge_pages.h"

#include <sys/mman.h>

#include <string>
#include <utility>

#include "core/error.h"

namespace brisk {

namespace {
constexpr size_t kHugePage = size_t{2} << 20;
}

HugePageBuffer::HugePageBuffer(size_t bytes, const char* what) {
  if (bytes == 0) return;
  // One spare huge page, so the data can start on a 2 MB boundary.
  const size_t n = (bytes + kHugePage - 1) / kHugePage * kHugePage + kHugePage;
  void* p = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    fail(BRISK_ERR_OUT_OF_MEMORY, "cannot allocate " + std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB for " + what);
  map_ = p;
  map_bytes_ = n;
  data_ = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(p) + kHugePage - 1) & ~(kHugePage - 1));
  size_ = bytes;
  // Advisory: without transparent huge pages the buffer still works.
  ::madvise(data_, (bytes + kHugePage - 1) / kHugePage * kHugePage, MADV_HUGEPAGE);
}

HugePageBuffer::~HugePageBuffer() { release(); }

HugePageBuffer::HugePageBuffer(HugePageBuffer&& o) noexcept
    : map_(std::exchange(o.map_, nullptr)),
      map_bytes_(std::exchange(o.map_bytes_, 0)),
      data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)) {}

HugePageBuffer& HugePageBuffer::operator=(HugePageBuffer&& o) noexcept {
  if (this != &o) {
    release();
    map_ = std::exchange(o.map_, nullptr);
    map_bytes_ = std::exchange(o.map_bytes_, 0);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

void HugePageBuffer::release() noexcept {
  if (map_) ::munmap(map_, map_bytes_);
  map_ = nullptr;
  data_ = nullptr;
  map_bytes_ = size_ = 0;
}

}  // namespace brisk
