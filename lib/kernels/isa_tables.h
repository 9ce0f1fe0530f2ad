// SPDX-License-Identifier: MIT
// Each instruction set's file exports one lookup; dispatch.cpp picks among them.
// A lookup returns nullptr for types that ISA does not (yet) accelerate, and the
// dispatcher then falls back to the next lower ISA.
#pragma once
#include "core/tensor_type.h"
#include "kernels/matmul.h"

namespace brisk::kernels {
const MatmulKernel* ref_matmul_kernel(TensorType weight_type);     // ref/, always complete
const MatmulKernel* avx2_matmul_kernel(TensorType weight_type);    // avx2/
const MatmulKernel* avx512_matmul_kernel(TensorType weight_type);  // avx512/ (needs VNNI)
// Kernels over the packed layout (kernels/packed.h); nullptr where none.
const MatmulKernel* ref_packed_matmul_kernel(TensorType weight_type);
const MatmulKernel* avx2_packed_matmul_kernel(TensorType weight_type);    // avx2/ (no VNNI needed)
const MatmulKernel* avx512_packed_matmul_kernel(TensorType weight_type);
const MatmulKernel* amx_packed_matmul_kernel(TensorType weight_type);  // amx/ (needs AMX-BF16)
}  // namespace brisk::kernels
