// SPDX-License-Identifier: MIT
// Matrix kernels: one table per weight type, one table per instruction set.
//
// A matmul computes out[c][r] = dot(W row r, x column c) for a tile of weight
// rows and every activation column of the batch. Activations are first
// converted once per column into the weight type's `act_type` (Q8 blocks for
// the quantized types, F32 for float weights); the tile kernel then reads each
// weight block once and applies it to all columns, which is what makes many
// sequences per step cheap.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/tensor_type.h"

namespace brisk::kernels {

// amx: the AVX-512 kernels plus AMX tile gemms over packed weights for
// prompt-sized batches (kernels/amx/).
enum class Isa : int { scalar = 0, avx2 = 1, avx512 = 2, amx = 3 };
const char* isa_name(Isa isa);

struct MatmulKernel {
  TensorType act_type;  // F32, Q8_0, Q8_1 or Q8_K
  // Converts k floats (one activation column) to act_type.
  void (*quantize_act)(const float* x, void* out, int64_t k);
  // For r < nrows, c < ncols:
  //   out[c * out_stride + r] = dot(row r of w, column c of act)
  // w: first weight row, rows w_stride bytes apart.
  // act: first activation column (already in act_type), columns act_stride bytes apart.
  void (*gemm)(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
               size_t act_stride, int ncols, float* out, size_t out_stride);
  // Bytes of one converted column; nullptr means row_bytes(act_type, k).
  size_t (*act_bytes)(int64_t k) = nullptr;
  // True if gemm reads weights in the packed layout of kernels/packed.h:
  // w is then the first 16-row group and w_stride the bytes of one group.
  bool packed = false;
};

// The kernel for a weight type on the active instruction set. Throws
// brisk::Error(BRISK_ERR_UNSUPPORTED) for types without kernels.
const MatmulKernel& matmul_kernel(TensorType weight_type);
// The kernel for a given instruction set (tests compare them). Returns nullptr
// if that ISA has no kernel for this type or the CPU cannot run it.
const MatmulKernel* matmul_kernel_for(TensorType weight_type, Isa isa);

// The kernel for weights packed as kernels/packed.h describes, on the active
// instruction set, or nullptr if that ISA has none for this type (the weights
// then stay in the GGUF layout).
const MatmulKernel* packed_matmul_kernel(TensorType weight_type);
const MatmulKernel* packed_matmul_kernel_for(TensorType weight_type, Isa isa);
// Bytes of one activation column as `kern` expects it.
size_t act_column_bytes(const MatmulKernel& kern, int64_t k);

// Instruction set chosen once at start-up: the best the CPU and OS support
// (CPUID + XGETBV, for AMX the OS's permission), unless
// BRISK_ISA=scalar|avx2|avx512|amx asks for less (avx512: without AMX).
Isa active_isa();
// The best the machine supports, ignoring BRISK_ISA.
Isa best_supported_isa();
bool isa_supported(Isa isa);
// False in a build without the x86 SIMD kernels (BRISK_X86_KERNELS=OFF, or
// another architecture): then only the scalar kernels exist.
bool simd_kernels_built();

}  // namespace brisk::kernels
