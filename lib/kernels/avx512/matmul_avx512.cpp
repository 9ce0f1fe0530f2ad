// SPDX-License-Identifier: MIT
// The AVX-512 (F/BW/VL/DQ + VNNI) kernel table. dispatch.cpp only calls this
// when the CPU and OS support those extensions.
#include "core/cpu.h"
#include "kernels/avx512/common.h"
#include "kernels/isa_tables.h"
#include "kernels/variants.h"
#include "kernels/packed.h"

namespace brisk::kernels {

const MatmulKernel* avx512_packed_matmul_kernel(TensorType t) {
  using namespace avx512;
  static const MatmulKernel q8_0{TensorType::Q8_0, quantize_q8_0_sums, gemm_q8_0_packed, q8_0_sums_bytes, true};
  static const MatmulKernel q4_0{TensorType::Q8_0, quantize_q8_0_sums, gemm_q4_0_packed, q8_0_sums_bytes, true};
  static const MatmulKernel q4_k{TensorType::Q8_K, quantize_q8_k, gemm_q4_k_packed, nullptr, true};
  static const MatmulKernel q6_k{TensorType::Q8_K, quantize_q8_k, gemm_q6_k_packed, nullptr, true};
  static const MatmulKernel f16{TensorType::BF16, quantize_packed_float_act, gemm_f16_packed, packed_float_act_bytes,
                                true};
  static const MatmulKernel bf16{TensorType::BF16, quantize_packed_float_act, gemm_bf16_packed,
                                 packed_float_act_bytes, true};
  // The float kernels' batch path is vdpbf16ps: without AVX-512 BF16 those
  // weights stay row-major.
  static const bool has_bf16 = cpu_features().avx512_bf16;
  switch (t) {
    case TensorType::F16: return has_bf16 ? &f16 : nullptr;
    case TensorType::BF16: return has_bf16 ? &bf16 : nullptr;
    case TensorType::Q8_0: return &q8_0;
    case TensorType::Q4_0: return &q4_0;
    case TensorType::Q4_K: return &q4_k;
    case TensorType::Q6_K: return &q6_k;
    default: return nullptr;
  }
}

// The packed kernels' other prefetch schemes (decode), where the default
// packed table has a kernel for t.
void avx512_extra_variants(TensorType t, std::vector<KernelVariant>& out) {
  if (!avx512_packed_matmul_kernel(t)) return;
  int n = 0;
  const KernelVariant* v = packed_float_type(t) ? avx512::packed_float_decode_variants(t, &n)
                                                : avx512::packed_decode_variants(t, &n);
  for (int i = 0; i < n; ++i) append_variant(out, v[i]);
}

const MatmulKernel* avx512_matmul_kernel(TensorType t) {
  using namespace avx512;
  static const MatmulKernel f32{TensorType::F32, quantize_f32, gemm_f32};
  static const MatmulKernel f16{TensorType::F32, quantize_f32, gemm_f16};
  static const MatmulKernel bf16{TensorType::F32, quantize_f32, gemm_bf16};
  static const MatmulKernel q8_0{TensorType::Q8_0, quantize_q8_0, gemm_q8_0};
  static const MatmulKernel q4_0{TensorType::Q8_0, quantize_q8_0, gemm_q4_0};
  static const MatmulKernel q4_1{TensorType::Q8_1, quantize_q8_1, gemm_q4_1};
  static const MatmulKernel q4_k{TensorType::Q8_K, quantize_q8_k, gemm_q4_k};
  static const MatmulKernel q5_k{TensorType::Q8_K, quantize_q8_k, gemm_q5_k};
  static const MatmulKernel q6_k{TensorType::Q8_K, quantize_q8_k, gemm_q6_k};
  switch (t) {
    case TensorType::F32: return &f32;
    case TensorType::F16: return &f16;
    case TensorType::BF16: return &bf16;
    case TensorType::Q8_0: return &q8_0;
    case TensorType::Q4_0: return &q4_0;
    case TensorType::Q4_1: return &q4_1;
    case TensorType::Q4_K: return &q4_k;
    case TensorType::Q5_K: return &q5_k;
    case TensorType::Q6_K: return &q6_k;
    default: return nullptr;
  }
}

}  // namespace brisk::kernels
