// SPDX-License-Identifier: MIT
// Block layouts, byte-for-byte those of ggml/GGUF. A block covers QK weights
// of one row; a row is a sequence of blocks. Scales are IEEE half (uint16_t).
#pragma once
#include <cstdint>

namespace brisk::quant {

constexpr int QK4_0 = 32;
constexpr int QK4_1 = 32;
constexpr int QK8_0 = 32;
constexpr int QK8_1 = 32;
constexpr int QK_K = 256;
constexpr int K_SCALE_SIZE = 12;

struct BlockQ4_0 {
  uint16_t d;              // scale
  uint8_t qs[QK4_0 / 2];   // nibbles: low nibble = weight j, high = weight j+16
};
static_assert(sizeof(BlockQ4_0) == 18);

struct BlockQ4_1 {
  uint16_t d;              // scale
  uint16_t m;              // minimum
  uint8_t qs[QK4_1 / 2];
};
static_assert(sizeof(BlockQ4_1) == 20);

struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[QK8_0];
};
static_assert(sizeof(BlockQ8_0) == 34);

// Activations for Q4_1 dot products: s = d * sum(qs), so the min term is one multiply.
struct BlockQ8_1 {
  uint16_t d;
  uint16_t s;
  int8_t qs[QK8_1];
};
static_assert(sizeof(BlockQ8_1) == 36);

// 8 sub-blocks of 32: 6-bit scales and mins packed in 12 bytes.
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[K_SCALE_SIZE];
  uint8_t qs[QK_K / 2];
};
static_assert(sizeof(BlockQ4_K) == 144);

struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[K_SCALE_SIZE];
  uint8_t qh[QK_K / 8];    // fifth bit of each weight
  uint8_t qs[QK_K / 2];
};
static_assert(sizeof(BlockQ5_K) == 176);

// 16 sub-blocks of 16 with signed 8-bit scales.
struct BlockQ6_K {
  uint8_t ql[QK_K / 2];    // low 4 bits
  uint8_t qh[QK_K / 4];    // high 2 bits
  int8_t scales[QK_K / 16];
  uint16_t d;
};
static_assert(sizeof(BlockQ6_K) == 210);

// Activations for K-quant dot products: float scale, and per-16 sums of qs.
struct BlockQ8_K {
  float d;
  int8_t qs[QK_K];
  int16_t bsums[QK_K / 16];
};
static_assert(sizeof(BlockQ8_K) == 292);

}  // namespace brisk::quant
