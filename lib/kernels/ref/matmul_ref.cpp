// SPDX-License-Identifier: MIT
// Scalar reference matrix kernels: the table every ISA falls back to, and
// the ground truth the AVX2/AVX-512 kernels are tested against. The gemm is
// the literal contract of matmul.h, one dot product per (row, column).
#include <cstring>

#include "kernels/isa_tables.h"
#include "kernels/packed.h"
#include "kernels/ref/dot_ref.h"
#include "quant/quant.h"

namespace brisk::kernels {

namespace {

using DotFn = float (*)(int64_t k, const void* w, const void* act);

template <DotFn dot>
void gemm_ref(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
              size_t act_stride, int ncols, float* out, size_t out_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(act);
  for (int c = 0; c < ncols; ++c) {
    for (int r = 0; r < nrows; ++r) {
      out[static_cast<size_t>(c) * out_stride + static_cast<size_t>(r)] =
          dot(k, wb + static_cast<size_t>(r) * w_stride, ab + static_cast<size_t>(c) * act_stride);
    }
  }
}

void act_f32(const float* x, void* out, int64_t k) {
  std::memcpy(out, x, static_cast<size_t>(k) * sizeof(float));
}
// Activation encoders are ggml's reference ones (quantize_row without
// importance is exactly that).
void act_q8_0(const float* x, void* out, int64_t k) { quant::quantize_row(TensorType::Q8_0, x, out, k); }
void act_q8_1(const float* x, void* out, int64_t k) { quant::quantize_row(TensorType::Q8_1, x, out, k); }
void act_q8_k(const float* x, void* out, int64_t k) { quant::quantize_row(TensorType::Q8_K, x, out, k); }

const MatmulKernel kF32{TensorType::F32, act_f32, gemm_ref<ref::dot_f32_f32>};
const MatmulKernel kF16{TensorType::F32, act_f32, gemm_ref<ref::dot_f16_f32>};
const MatmulKernel kBF16{TensorType::F32, act_f32, gemm_ref<ref::dot_bf16_f32>};
const MatmulKernel kQ8_0{TensorType::Q8_0, act_q8_0, gemm_ref<ref::dot_q8_0_q8_0>};
const MatmulKernel kQ4_0{TensorType::Q8_0, act_q8_0, gemm_ref<ref::dot_q4_0_q8_0>};
const MatmulKernel kQ4_1{TensorType::Q8_1, act_q8_1, gemm_ref<ref::dot_q4_1_q8_1>};
const MatmulKernel kQ4_K{TensorType::Q8_K, act_q8_k, gemm_ref<ref::dot_q4_k_q8_k>};
const MatmulKernel kQ5_K{TensorType::Q8_K, act_q8_k, gemm_ref<ref::dot_q5_k_q8_k>};
const MatmulKernel kQ6_K{TensorType::Q8_K, act_q8_k, gemm_ref<ref::dot_q6_k_q8_k>};

const MatmulKernel kQ8_0Packed{TensorType::Q8_0, quantize_q8_0_sums_ref, gemm_q8_0_packed_ref, q8_0_sums_bytes, true};
const MatmulKernel kQ4_0Packed{TensorType::Q8_0, quantize_q8_0_sums_ref, gemm_q4_0_packed_ref, q8_0_sums_bytes, true};
const MatmulKernel kQ4_KPacked{TensorType::Q8_K, act_q8_k, gemm_q4_k_packed_ref, nullptr, true};
const MatmulKernel kQ6_KPacked{TensorType::Q8_K, act_q8_k, gemm_q6_k_packed_ref, nullptr, true};
const MatmulKernel kF16Packed{TensorType::BF16, quantize_packed_float_act_ref, gemm_f16_packed_ref,
                              packed_float_act_bytes, true};
const MatmulKernel kBF16Packed{TensorType::BF16, quantize_packed_float_act_ref, gemm_bf16_packed_ref,
                               packed_float_act_bytes, true};

}  // namespace

const MatmulKernel* ref_packed_matmul_kernel(TensorType weight_type) {
  switch (weight_type) {
    case TensorType::Q8_0: return &kQ8_0Packed;
    case TensorType::Q4_0: return &kQ4_0Packed;
    case TensorType::Q4_K: return &kQ4_KPacked;
    case TensorType::Q6_K: return &kQ6_KPacked;
    case TensorType::F16: return &kF16Packed;
    case TensorType::BF16: return &kBF16Packed;
    default: return nullptr;
  }
}

const MatmulKernel* ref_matmul_kernel(TensorType weight_type) {
  switch (weight_type) {
    case TensorType::F32: return &kF32;
    case TensorType::F16: return &kF16;
    case TensorType::BF16: return &kBF16;
    case TensorType::Q8_0: return &kQ8_0;
    case TensorType::Q4_0: return &kQ4_0;
    case TensorType::Q4_1: return &kQ4_1;
    case TensorType::Q4_K: return &kQ4_K;
    case TensorType::Q5_K: return &kQ5_K;
    case TensorType::Q6_K: return &kQ6_K;
    default: return nullptr;
  }
}

}  // namespace brisk::kernels
