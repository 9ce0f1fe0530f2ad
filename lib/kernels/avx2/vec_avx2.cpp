// SPDX-License-Identifier: MIT
// avx2 attention vector kernels (see kernels/vec.h): the width-generic ones
// of simd/vec_ops.h in 8 lanes. SwiGLU stays the scalar ops::swiglu (its
// results those of expf): AVX2 has no vector kernel of its own for it.
#include "kernels/avx2/simd_traits.h"
#include "kernels/ops.h"
#include "kernels/simd/vec_ops.h"

namespace brisk::kernels {

namespace {

using avx2::Vec;

const VecKernels kTable{simd::to_f32<Vec>, simd::dot<Vec>,  simd::axpy<Vec>,         avx2::attend,
                        ops::swiglu,       simd::from_f32<Vec>, simd::read_sum<Vec>,
                        simd::exp_sum<Vec>, simd::rmsnorm<Vec>};

}  // namespace

const VecKernels* avx2_vec_kernels() { return &kTable; }

}  // namespace brisk::kernels
