// SPDX-License-Identifier: MIT
// The AVX2 (+FMA, F16C) kernel table. dispatch.cpp only calls this
// when the CPU and OS support those extensions.
#include "core/cpu.h"
#include "kernels/avx2/common.h"
#include "kernels/avx2vnni/vnni.h"
#include "kernels/isa_tables.h"
#include "kernels/packed.h"
#include "kernels/variants.h"

namespace brisk::kernels {

const MatmulKernel* avx2_matmul_kernel(TensorType t) {
  using namespace avx2;
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

// Where the CPU has AVX-VNNI and the type has VNNI kernels, those (with
// their own one-column prefetch schemes) replace the plain kernels'
// prefetch variants: the plain default stays a candidate (the VNNI base
// kernels are the planner's baseline, KernelVariant::baseline), and the
// plan measures a handful of candidates instead of twice as many. F16 and BF16,
// whose VNNI kernels are batch ones only, keep the plain variants too.
void avx2_extra_variants(TensorType t, std::vector<KernelVariant>& out) {
  int n = 0;
  const KernelVariant* v = nullptr;
  if (cpu_features().avx_vnni) {
    v = avx2vnni::packed_vnni_variants(t, &n);
    for (int i = 0; i < n; ++i) append_variant(out, v[i]);
    if (n > 0 && t != TensorType::F16 && t != TensorType::BF16) return;
  }
  v = avx2::packed_q_decode_variants(t, &n);
  if (n == 0) v = avx2::packed_k_decode_variants(t, &n);
  if (n == 0) v = avx2::packed_float_decode_variants(t, &n);
  for (int i = 0; i < n; ++i) append_variant(out, v[i]);
}

// Over packed weights (kernels/packed.h); nullptr for the types without one.
const MatmulKernel* avx2_packed_matmul_kernel(TensorType t) {
  using namespace avx2;
  static const MatmulKernel q8_0{TensorType::Q8_0, quantize_q8_0_sums, gemm_q8_0_packed, q8_0_sums_bytes, true};
  static const MatmulKernel q4_0{TensorType::Q8_0, quantize_q8_0_sums, gemm_q4_0_packed, q8_0_sums_bytes, true};
  static const MatmulKernel q4_k{TensorType::Q8_K, quantize_q8_k, gemm_q4_k_packed, nullptr, true};
  static const MatmulKernel q6_k{TensorType::Q8_K, quantize_q8_k, gemm_q6_k_packed, nullptr, true};
  static const MatmulKernel f16{TensorType::F32, quantize_f32, gemm_f16_packed, nullptr, true};
  static const MatmulKernel bf16{TensorType::F32, quantize_f32, gemm_bf16_packed, nullptr, true};
  switch (t) {
    case TensorType::Q8_0: return &q8_0;
    case TensorType::Q4_0: return &q4_0;
    case TensorType::Q4_K: return &q4_k;
    case TensorType::Q6_K: return &q6_k;
    case TensorType::F16: return &f16;
    case TensorType::BF16: return &bf16;
    default: return nullptr;
  }
}

}  // namespace brisk::kernels
