// SPDX-License-Identifier: MIT
// Scalar dot products of one weight row with one activation column, k
// elements, in the weight type's act_type. They follow ggml's generic
// ggml_vec_dot_* structure: integer products summed per block in int32, then
// scaled once per block in float. SIMD kernels are tested against these.
#pragma once
#include <cstdint>

namespace brisk::kernels::ref {

float dot_f32_f32(int64_t k, const void* w, const void* act);
float dot_f16_f32(int64_t k, const void* w, const void* act);
float dot_bf16_f32(int64_t k, const void* w, const void* act);
float dot_q8_0_q8_0(int64_t k, const void* w, const void* act);
float dot_q4_0_q8_0(int64_t k, const void* w, const void* act);
float dot_q4_1_q8_1(int64_t k, const void* w, const void* act);
float dot_q4_k_q8_k(int64_t k, const void* w, const void* act);
float dot_q5_k_q8_k(int64_t k, const void* w, const void* act);
float dot_q6_k_q8_k(int64_t k, const void* w, const void* act);

}  // namespace brisk::kernels::ref
