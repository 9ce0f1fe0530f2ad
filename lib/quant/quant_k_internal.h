// SPDX-License-Identifier: MIT
// Pieces shared between the K-quant reference encoders (quant_k.cpp) and the
// importance-weighted ones (quant_k_weighted.cpp). One super-block each.
#pragma once
#include <cstdint>

#include "quant/blocks.h"

namespace brisk::quant::detail {

// Final levels of all 8 sub-blocks given the stored d, dmin and 6-bit
// scales/mins (Q4_K: nmax 15, Q5_K: nmax 31).
void requantize_q45_k(const float* x, int nmax, uint16_t d16, uint16_t dmin16,
                      const uint8_t* scales, uint8_t* L);
// Final levels (0..63, i.e. offset by 32) given the stored d and scales.
void requantize_q6_k(const float* x, const BlockQ6_K& y, int8_t* L);

void pack_q4_k(const uint8_t* L, BlockQ4_K* y);
void pack_q5_k(const uint8_t* L, BlockQ5_K* y);
void pack_q6_k(const int8_t* L, BlockQ6_K* y);

void q4_k_ref_block(const float* x, BlockQ4_K* y);
void q5_k_ref_block(const float* x, BlockQ5_K* y);
void q6_k_ref_block(const float* x, BlockQ6_K* y);

void q4_k_weighted_block(const float* x, const float* w, BlockQ4_K* y);
void q5_k_weighted_block(const float* x, const float* w, BlockQ5_K* y);
void q6_k_weighted_block(const float* x, const float* w, BlockQ6_K* y);

}  // namespace brisk::quant::detail
