// SPDX-License-Identifier: MIT
// The AVX-VNNI kernels (matmul_packed_vnni.cpp): variants of the AVX2 packed
// tables, listed by avx2_extra_variants where CPUID reports AVX-VNNI.
#pragma once
#include "core/tensor_type.h"

namespace brisk::kernels {
struct KernelVariant;
}

namespace brisk::kernels::avx2vnni {

// The variants for weight type t (*n of them; nullptr and 0 for types
// without one). Call only where cpu_features().avx_vnni.
const KernelVariant* packed_vnni_variants(TensorType t, int* n);

}  // namespace brisk::kernels::avx2vnni
