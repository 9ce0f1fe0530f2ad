// SPDX-License-Identifier: MIT
#include "kernels/scratch.h"

#include <cstdlib>

namespace brisk::kernels {

namespace {
struct ScratchBuf {
  void* p = nullptr;
  size_t size = 0;
  ~ScratchBuf() { std::free(p); }
};
thread_local ScratchBuf t_scratch;
}  // namespace

void* scratch(size_t bytes) {
  ScratchBuf& b = t_scratch;
  if (b.size < bytes) {
    std::free(b.p);
    // Round up so aligned_alloc's size is a multiple of the alignment, and
    // grow geometrically to avoid reallocating on slowly growing batches.
    size_t want = bytes + bytes / 2;
    want = (want + 63) & ~static_cast<size_t>(63);
    b.p = std::aligned_alloc(64, want);
    if (!b.p) std::abort();
    b.size = want;
  }
  return b.p;
}

}  // namespace brisk::kernels
