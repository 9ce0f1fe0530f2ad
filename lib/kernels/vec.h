// Vector kernels of attention: cache rows to floats, dot products and
// scaled accumulation. Attention does not batch across sequences the way the
// matmuls do, so with many sequences or long contexts these matter; they have
// a scalar reference and per-ISA variants like the matmuls.
#pragma once
#include <cstdint>

#include "core/tensor_type.h"
#include "kernels/matmul.h"

namespace brisk::kernels {

struct VecKernels {
  // n floats from a cache row segment of type F32, F16, Q8_0 or Q4_0
  // (n a multiple of 32 for the block types).
  void (*to_f32)(TensorType type, const void* src, float* dst, int n);
  float (*dot)(const float* a, const float* b, int n);
  // y += a * x
  void (*axpy)(float* y, float a, const float* x, int n);
};

const VecKernels& vec_kernels();               // active ISA
const VecKernels* vec_kernels_for(Isa isa);    // nullptr if the CPU cannot run it

// Per-ISA tables (defined in ref/, avx2/, avx512/).
const VecKernels* ref_vec_kernels();
const VecKernels* avx2_vec_kernels();
const VecKernels* avx512_vec_kernels();

}  // namespace brisk::kernels
