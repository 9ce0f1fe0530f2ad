// SPDX-License-Identifier: MIT
// A per-thread scratch buffer for the kernels of every ISA (repacked
// activations, converted weight rows).
#pragma once
#include <cstddef>

namespace brisk::kernels {

// At least `bytes` bytes, 64-byte aligned, owned by the calling thread:
// grown on demand, never shrunk (the gemm calls of a worker thread reuse
// it), freed when the thread exits. Valid until the thread's next call.
// Compiled without any ISA's flags, so the ISA files may call it.
void* scratch(size_t bytes);

}  // namespace brisk::kernels
