// SPDX-License-Identifier: MIT
// Small helpers shared by the quantization and reference-kernel tests.
#pragma once
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "core/tensor_type.h"
#include "quant/quant.h"

namespace brisk::test {

// Deterministic Gaussian data (libstdc++'s normal_distribution is stable).
inline std::vector<float> gaussian(size_t n, uint32_t seed, float sigma = 1.f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

inline std::vector<float> roundtrip(TensorType t, const std::vector<float>& x,
                                    const float* importance = nullptr) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> buf(row_bytes(t, n));
  quant::quantize_row(t, x.data(), buf.data(), n, importance);
  std::vector<float> y(x.size());
  quant::dequantize_row(t, buf.data(), y.data(), n);
  return y;
}

inline int64_t block_size(TensorType t) { return type_traits(t).block_size; }

// Every format quantize_row/dequantize_row handle.
inline const std::vector<TensorType>& all_quant_types() {
  static const std::vector<TensorType> v = {
      TensorType::F32,  TensorType::F16,  TensorType::BF16, TensorType::Q4_0,
      TensorType::Q4_1, TensorType::Q8_0, TensorType::Q8_1, TensorType::Q4_K,
      TensorType::Q5_K, TensorType::Q6_K, TensorType::Q8_K};
  return v;
}

}  // namespace brisk::test
