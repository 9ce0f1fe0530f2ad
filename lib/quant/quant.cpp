// SPDX-License-Identifier: MIT
// Type dispatch for quant.h, plus the element-wise float formats.
#include "quant/quant.h"

#include <cmath>
#include <cstring>
#include <string>

#include "core/error.h"
#include "core/fp16.h"
#include "quant/quant_internal.h"

namespace brisk::quant {

using namespace detail;

namespace {
[[noreturn]] void unsupported(const char* what, TensorType t) {
  fail(BRISK_ERR_UNSUPPORTED, std::string(what) + ": no scalar conversion for type " + type_name(t));
}
}  // namespace

void dequantize_row(TensorType type, const void* src, float* dst, int64_t n) {
  switch (type) {
    case TensorType::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case TensorType::F16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_f32(s[i]);
      return;
    }
    case TensorType::BF16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
      return;
    }
    case TensorType::Q4_0: return dequantize_q4_0(static_cast<const BlockQ4_0*>(src), dst, n);
    case TensorType::Q4_1: return dequantize_q4_1(static_cast<const BlockQ4_1*>(src), dst, n);
    case TensorType::Q8_0: return dequantize_q8_0(static_cast<const BlockQ8_0*>(src), dst, n);
    case TensorType::Q8_1: return dequantize_q8_1(static_cast<const BlockQ8_1*>(src), dst, n);
    case TensorType::Q4_K: return dequantize_q4_k(static_cast<const BlockQ4_K*>(src), dst, n);
    case TensorType::Q5_K: return dequantize_q5_k(static_cast<const BlockQ5_K*>(src), dst, n);
    case TensorType::Q6_K: return dequantize_q6_k(static_cast<const BlockQ6_K*>(src), dst, n);
    case TensorType::Q8_K: return dequantize_q8_k(static_cast<const BlockQ8_K*>(src), dst, n);
    default: unsupported("dequantize_row", type);
  }
}

int64_t first_non_finite(const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) return i;
  return -1;
}

size_t quantize_row(TensorType type, const float* src, void* dst, int64_t n,
                    const float* importance) {
  switch (type) {
    // Plain formats have no scale to choose, so importance cannot change them.
    case TensorType::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      break;
    case TensorType::F16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = f32_to_fp16(src[i]);
      break;
    }
    case TensorType::BF16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = f32_to_bf16(src[i]);
      break;
    }
    case TensorType::Q4_0: quantize_q4_0(src, static_cast<BlockQ4_0*>(dst), n, importance); break;
    case TensorType::Q4_1: quantize_q4_1(src, static_cast<BlockQ4_1*>(dst), n, importance); break;
    case TensorType::Q8_0: quantize_q8_0(src, static_cast<BlockQ8_0*>(dst), n, importance); break;
    // Activation formats: always the ggml reference, the kernels depend on it.
    case TensorType::Q8_1: quantize_q8_1(src, static_cast<BlockQ8_1*>(dst), n); break;
    case TensorType::Q8_K: quantize_q8_k(src, static_cast<BlockQ8_K*>(dst), n); break;
    case TensorType::Q4_K: quantize_q4_k(src, static_cast<BlockQ4_K*>(dst), n, importance); break;
    case TensorType::Q5_K: quantize_q5_k(src, static_cast<BlockQ5_K*>(dst), n, importance); break;
    case TensorType::Q6_K: quantize_q6_k(src, static_cast<BlockQ6_K*>(dst), n, importance); break;
    default: unsupported("quantize_row", type);
  }
  return row_bytes(type, n);
}

bool can_quantize(TensorType type) {
  switch (type) {
    case TensorType::F32:
    case TensorType::F16:
    case TensorType::BF16:
    case TensorType::Q4_0:
    case TensorType::Q4_1:
    case TensorType::Q8_0:
    case TensorType::Q4_K:
    case TensorType::Q5_K:
    case TensorType::Q6_K:
      return true;
    default:
      return false;
  }
}

}  // namespace brisk::quant
