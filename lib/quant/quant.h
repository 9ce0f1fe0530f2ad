// SPDX-License-Identifier: MIT
// Scalar reference conversions between float rows and every block format.
// These are the ground truth the SIMD kernels are tested against, and the
// quantizer `brisk quantize` uses. Row lengths must be multiples of the
// type's block size (checked by the caller; see tensor_type.h).
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/tensor_type.h"

namespace brisk::quant {

// dst[0..n) = the values src encodes. Supported: F32, F16, BF16, Q4_0, Q4_1,
// Q8_0, Q8_1, Q4_K, Q5_K, Q6_K, Q8_K.
void dequantize_row(TensorType type, const void* src, float* dst, int64_t n);

// Encodes n floats as `type` into dst; returns bytes written.
// importance == nullptr: the result is byte-identical to ggml's reference
// quantizer (what llama-quantize writes without an importance matrix).
// importance != nullptr (n weights per row, >= 0): block scales are chosen to
// minimise sum_i importance[i] * (x_i - q_i)^2 instead.
size_t quantize_row(TensorType type, const float* src, void* dst, int64_t n,
                    const float* importance = nullptr);

// True if quantize_row can produce `type` (the weight formats brisk writes).
bool can_quantize(TensorType type);

// Index of the first NaN or infinite value of x[0..n), -1 if none. The block
// quantizers turn such a value into an undefined float-to-int conversion, so
// weights read from a file are checked before they are quantized.
int64_t first_non_finite(const float* x, int64_t n);

}  // namespace brisk::quant
