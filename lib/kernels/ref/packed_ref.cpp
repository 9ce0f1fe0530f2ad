// SPDX-License-Identifier: MIT
// The packed layout of kernels/packed.h: packing, unpacking, the "Q8_0 with
// sums" activations and the scalar gemms that define what the SIMD packed
// kernels must compute. Written to read like the layout description.
#include <cstring>

#include "core/fp16.h"
#include "kernels/packed.h"
#include "quant/blocks.h"
#include "quant/quant.h"
#include "quant/quant_internal.h"

namespace brisk::kernels {

using quant::BlockQ4_0;
using quant::BlockQ4_K;
using quant::BlockQ6_K;
using quant::BlockQ8_0;
using quant::BlockQ8_K;

namespace {

int slices(TensorType t) { return t == TensorType::Q4_0 ? 4 : 8; }
size_t pair_bytes(TensorType t) { return 64 + 2 * static_cast<size_t>(slices(t)) * 64; }
size_t block_bytes(TensorType t) { return t == TensorType::Q4_0 ? sizeof(BlockQ4_0) : sizeof(BlockQ8_0); }

// Where block b's scales and slices start inside a group.
const uint8_t* scales_of(const uint8_t* group, TensorType t, int64_t b) {
  return group + static_cast<size_t>(b / 2) * pair_bytes(t) + static_cast<size_t>(b % 2) * 32;
}
size_t slices_offset(TensorType t, int64_t b) {
  return static_cast<size_t>(b / 2) * pair_bytes(t) + 64 + static_cast<size_t>(b % 2) * slices(t) * 64;
}

}  // namespace

bool packable(TensorType t) {
  return t == TensorType::Q4_0 || t == TensorType::Q8_0 || t == TensorType::Q4_K || t == TensorType::Q6_K ||
         packed_float_type(t);
}
bool packable(TensorType t, int64_t k) {
  return packable(t) && k > 0 && (!packed_float_type(t) || k % 2 == 0);
}

size_t packed_group_bytes(TensorType t, int64_t k) {
  if (packed_float_type(t)) return static_cast<size_t>(k) * 2 * kPackRows;
  if (t == TensorType::Q4_K) return static_cast<size_t>(k / 256) * kQ4KSuperBytes;
  if (t == TensorType::Q6_K) return static_cast<size_t>(k / 256) * kQ6KSuperBytes;
  const int64_t nb = k / 32;
  return static_cast<size_t>((nb + 1) / 2) * pair_bytes(t);
}

namespace {

// Q4_K: one super-block of 16 rows (packed.h); row r's 6-bit scale and min
// of sub-block s.
uint8_t q4_k_scale(const uint8_t* sb, int s, int r) { return sb[kQ4KScales + 16 * s + r] & 63; }
uint8_t q4_k_min(const uint8_t* sb, int s, int r) {
  const uint8_t lo = sb[kQ4KMinsLow + 16 * (s / 2) + r] >> (4 * (s % 2)) & 0x0F;
  return static_cast<uint8_t>(lo | (sb[kQ4KScales + 16 * s + r] >> 6) << 4);
}

void pack_q4_k(const uint8_t* rows, size_t row_stride, int nrows, int64_t k, uint8_t* group) {
  for (int r = 0; r < nrows; ++r) {
    const auto* x = reinterpret_cast<const BlockQ4_K*>(rows + static_cast<size_t>(r) * row_stride);
    for (int64_t b = 0; b < k / 256; ++b) {
      uint8_t* sb = group + static_cast<size_t>(b) * kQ4KSuperBytes;
      std::memcpy(sb + 2 * r, &x[b].d, 2);
      std::memcpy(sb + 32 + 2 * r, &x[b].dmin, 2);
      for (int s = 0; s < 8; ++s) {
        uint8_t sc, mn;
        quant::detail::get_scale_min_k4(s, x[b].scales, &sc, &mn);
        sb[kQ4KScales + 16 * s + r] = static_cast<uint8_t>(sc | (mn >> 4) << 6);
        uint8_t& lo = sb[kQ4KMinsLow + 16 * (s / 2) + r];
        lo = static_cast<uint8_t>(s % 2 ? lo | (mn & 0x0F) << 4 : mn & 0x0F);
      }
      for (int j = 0; j < 4; ++j)
        for (int m = 0; m < 8; ++m) std::memcpy(sb + kQ4KNibbles + 512 * j + 64 * m + 4 * r, x[b].qs + 32 * j + 4 * m, 4);
    }
  }
}

void unpack_q4_k(const uint8_t* group, int nrows, int64_t k, uint8_t* rows, size_t row_stride) {
  for (int r = 0; r < nrows; ++r) {
    auto* x = reinterpret_cast<BlockQ4_K*>(rows + static_cast<size_t>(r) * row_stride);
    for (int64_t b = 0; b < k / 256; ++b) {
      const uint8_t* sb = group + static_cast<size_t>(b) * kQ4KSuperBytes;
      std::memcpy(&x[b].d, sb + 2 * r, 2);
      std::memcpy(&x[b].dmin, sb + 32 + 2 * r, 2);
      std::memset(x[b].scales, 0, sizeof x[b].scales);
      for (int s = 0; s < 8; ++s) quant::detail::set_scale_min_k4(s, x[b].scales, q4_k_scale(sb, s, r), q4_k_min(sb, s, r));
      for (int j = 0; j < 4; ++j)
        for (int m = 0; m < 8; ++m) std::memcpy(x[b].qs + 32 * j + 4 * m, sb + kQ4KNibbles + 512 * j + 64 * m + 4 * r, 4);
    }
  }
}

// Q6_K: the 256 unsigned 6-bit values, in weight order, to GGUF's ql/qh.
void q6_k_from_values(const uint8_t* q, BlockQ6_K* x) {
  for (int h = 0; h < 2; ++h) {
    uint8_t* ql = x->ql + 64 * h;
    uint8_t* qh = x->qh + 32 * h;
    for (int l = 0; l < 32; ++l) {
      const uint8_t* v = q + 128 * h + l;
      ql[l] = static_cast<uint8_t>((v[0] & 0xF) | ((v[64] & 0xF) << 4));
      ql[l + 32] = static_cast<uint8_t>((v[32] & 0xF) | ((v[96] & 0xF) << 4));
      qh[l] = static_cast<uint8_t>((v[0] >> 4) | ((v[32] >> 4) << 2) | ((v[64] >> 4) << 4) | ((v[96] >> 4) << 6));
    }
  }
}
// Where weight w of row r sits in a packed Q6_K super-block: its nibble byte
// (low or high nibble) and its 2-bit field.
struct Q6Pos {
  size_t nib, hi;
  int nib_shift, hi_shift;
};
Q6Pos q6_pos(int w, int r) {
  const int j = w / 64, half = (w % 64) / 32, m = (w % 32) / 4, i = w % 4;
  const int h = w / 128, s = (w % 128) / 32;
  return {q6k_lo_offset(j, m) + 4 * r + i, q6k_hi_offset(h, m) + 4 * r + i, 4 * half, 2 * s};
}

// Straight from GGUF's planes (quant/blocks.h): for half h and position w
// (0..31) of its 32, ql[64h + w] holds the low 4 bits of weights 128h + w
// (low nibble) and 128h + 64 + w (high nibble), ql[64h + 32 + w] those of
// 128h + 32 + w and 128h + 96 + w, and qh[32h + w] the top 2 bits of
// 128h + 32s + w in bits 2s..2s+1: already the layout's high-bits byte. So a
// slice's 4 bytes are one 32-bit copy (high bits) and two masks and shifts
// (the nibbles of runs 2h and 2h + 1), not 256 values built one by one.
void pack_q6_k(const uint8_t* rows, size_t row_stride, int nrows, int64_t k, uint8_t* group) {
  auto load32 = [](const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
  };
  auto store32 = [](uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); };
  for (int r = 0; r < nrows; ++r) {
    const auto* x = reinterpret_cast<const BlockQ6_K*>(rows + static_cast<size_t>(r) * row_stride);
    for (int64_t b = 0; b < k / 256; ++b) {
      uint8_t* sb = group + static_cast<size_t>(b) * kQ6KSuperBytes;
      std::memcpy(sb + 2 * r, &x[b].d, 2);
      for (int s = 0; s < 16; ++s) sb[32 + 16 * s + r] = static_cast<uint8_t>(x[b].scales[s]);
      for (int h = 0; h < 2; ++h)
        for (int m = 0; m < 8; ++m) {
          const uint32_t a = load32(x[b].ql + 64 * h + 4 * m), c = load32(x[b].ql + 64 * h + 32 + 4 * m);
          store32(sb + q6k_hi_offset(h, m) + 4 * r, load32(x[b].qh + 32 * h + 4 * m));
          store32(sb + q6k_lo_offset(2 * h, m) + 4 * r, (a & 0x0F0F0F0Fu) | (c & 0x0F0F0F0Fu) << 4);
          store32(sb + q6k_lo_offset(2 * h + 1, m) + 4 * r, (a >> 4 & 0x0F0F0F0Fu) | (c & 0xF0F0F0F0u));
        }
    }
  }
}

void unpack_q6_k(const uint8_t* group, int nrows, int64_t k, uint8_t* rows, size_t row_stride) {
  uint8_t q[256];
  for (int r = 0; r < nrows; ++r) {
    auto* x = reinterpret_cast<BlockQ6_K*>(rows + static_cast<size_t>(r) * row_stride);
    for (int64_t b = 0; b < k / 256; ++b) {
      const uint8_t* sb = group + static_cast<size_t>(b) * kQ6KSuperBytes;
      std::memcpy(&x[b].d, sb + 2 * r, 2);
      for (int s = 0; s < 16; ++s) x[b].scales[s] = static_cast<int8_t>(sb[32 + 16 * s + r]);
      for (int w = 0; w < 256; ++w) {
        const Q6Pos p = q6_pos(w, r);
        q[w] = static_cast<uint8_t>(((sb[p.nib] >> p.nib_shift) & 0xF) | (((sb[p.hi] >> p.hi_shift) & 3) << 4));
      }
      q6_k_from_values(q, &x[b]);
    }
  }
}

}  // namespace

void pack_row_group(TensorType t, const uint8_t* rows, size_t row_stride, int nrows, int64_t k, uint8_t* group) {
  if (packed_float_type(t)) return pack_float_row_group(rows, row_stride, nrows, k, group);
  std::memset(group, 0, packed_group_bytes(t, k));
  if (t == TensorType::Q4_K) return pack_q4_k(rows, row_stride, nrows, k, group);
  if (t == TensorType::Q6_K) return pack_q6_k(rows, row_stride, nrows, k, group);
  const int64_t nb = k / 32;
  for (int r = 0; r < nrows; ++r) {
    const uint8_t* row = rows + static_cast<size_t>(r) * row_stride;
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* blk = row + static_cast<size_t>(b) * block_bytes(t);
      uint8_t* d = group + (scales_of(group, t, b) - group) + 2 * r;
      std::memcpy(d, blk, 2);  // the fp16 scale is the block's first field
      uint8_t* s = group + slices_offset(t, b);
      for (int m = 0; m < slices(t); ++m)
        for (int i = 0; i < 4; ++i) {
          const uint8_t q = blk[2 + 4 * m + i];
          s[64 * m + 4 * r + i] = t == TensorType::Q8_0 ? static_cast<uint8_t>(q ^ 0x80) : q;
        }
    }
  }
}

void unpack_row_group(TensorType t, const uint8_t* group, int nrows, int64_t k, uint8_t* rows, size_t row_stride) {
  if (packed_float_type(t)) return unpack_float_row_group(group, nrows, k, rows, row_stride);
  if (t == TensorType::Q4_K) return unpack_q4_k(group, nrows, k, rows, row_stride);
  if (t == TensorType::Q6_K) return unpack_q6_k(group, nrows, k, rows, row_stride);
  const int64_t nb = k / 32;
  for (int r = 0; r < nrows; ++r) {
    uint8_t* row = rows + static_cast<size_t>(r) * row_stride;
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* blk = row + static_cast<size_t>(b) * block_bytes(t);
      std::memcpy(blk, scales_of(group, t, b) + 2 * r, 2);
      const uint8_t* s = group + slices_offset(t, b);
      for (int m = 0; m < slices(t); ++m)
        for (int i = 0; i < 4; ++i) {
          const uint8_t q = s[64 * m + 4 * r + i];
          blk[2 + 4 * m + i] = t == TensorType::Q8_0 ? static_cast<uint8_t>(q ^ 0x80) : q;
        }
    }
  }
}

size_t q8_0_sums_offset(int64_t k) { return (static_cast<size_t>(k / 32) * sizeof(BlockQ8_0) + 63) & ~size_t{63}; }
size_t q8_0_sums_bytes(int64_t k) { return q8_0_sums_offset(k) + static_cast<size_t>(k / 32) * 8; }

void quantize_q8_0_sums_ref(const float* x, void* out, int64_t k) {
  quant::quantize_row(TensorType::Q8_0, x, out, k);
  const auto* blocks = static_cast<const BlockQ8_0*>(out);
  auto* base = static_cast<uint8_t*>(out) + q8_0_sums_offset(k);
  const int64_t nb = k / 32;
  for (int64_t b = 0; b < nb; ++b) {
    const float d = fp16_to_f32(blocks[b].d);
    int32_t sum = 0;
    for (int j = 0; j < 32; ++j) sum += blocks[b].qs[j];
    std::memcpy(base + 4 * b, &d, 4);
    std::memcpy(base + 4 * (nb + b), &sum, 4);
  }
}

namespace {

// Row r of block b's integer dot with the activation block, weights as the
// unsigned bytes the layout stores, minus offset x (sum of activations).
template <TensorType T>
void gemm_packed_ref(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride,
                     int ncols, float* out, size_t out_stride) {
  const int64_t nb = k / 32;
  const int offset = T == TensorType::Q4_0 ? 8 : 128;
  for (int c = 0; c < ncols; ++c) {
    const auto* col = static_cast<const uint8_t*>(act) + static_cast<size_t>(c) * act_stride;
    const auto* a = reinterpret_cast<const BlockQ8_0*>(col);
    const uint8_t* extra = col + q8_0_sums_offset(k);
    for (int r = 0; r < nrows; ++r) {
      const uint8_t* group = static_cast<const uint8_t*>(w) + static_cast<size_t>(r / kPackRows) * w_stride;
      const int rr = r % kPackRows;
      float sum = 0;
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* s = group + slices_offset(T, b);
        int32_t dot = 0;
        for (int m = 0; m < slices(T); ++m)
          for (int i = 0; i < 4; ++i) {
            const uint8_t q = s[64 * m + 4 * rr + i];
            if constexpr (T == TensorType::Q4_0) {
              dot += (q & 0xF) * a[b].qs[4 * m + i] + (q >> 4) * a[b].qs[16 + 4 * m + i];
            } else {
              dot += q * a[b].qs[4 * m + i];
            }
          }
        float da;
        int32_t asum;
        std::memcpy(&da, extra + 4 * b, 4);
        std::memcpy(&asum, extra + 4 * (nb + b), 4);
        uint16_t dw;
        std::memcpy(&dw, scales_of(group, T, b) + 2 * rr, 2);
        sum += static_cast<float>(dot - offset * asum) * (fp16_to_f32(dw) * da);
      }
      out[static_cast<size_t>(c) * out_stride + static_cast<size_t>(r)] = sum;
    }
  }
}

}  // namespace

void gemm_q4_0_packed_ref(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
                          size_t act_stride, int ncols, float* out, size_t out_stride) {
  gemm_packed_ref<TensorType::Q4_0>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}
namespace {

// The loops shared by the K-quant references: `super_dot(sb, r, a)` gives
// row r's dot with one Q8_K block for the super-block at sb.
template <size_t SuperBytes, typename SuperDot>
void gemm_k_packed_ref(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride,
                       int ncols, float* out, size_t out_stride, SuperDot super_dot) {
  for (int c = 0; c < ncols; ++c) {
    const auto* a = reinterpret_cast<const BlockQ8_K*>(static_cast<const uint8_t*>(act) + static_cast<size_t>(c) * act_stride);
    for (int r = 0; r < nrows; ++r) {
      const uint8_t* group = static_cast<const uint8_t*>(w) + static_cast<size_t>(r / kPackRows) * w_stride;
      float sum = 0;
      for (int64_t b = 0; b < k / 256; ++b) sum += super_dot(group + static_cast<size_t>(b) * SuperBytes, r % kPackRows, a[b]);
      out[static_cast<size_t>(c) * out_stride + static_cast<size_t>(r)] = sum;
    }
  }
}

}  // namespace

// Q4_K: w = d * sc_s * q - dmin * m_s per sub-block s of 32; against Q8_K
// activations (one scale per 256, sums per 16).
void gemm_q4_k_packed_ref(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride,
                          int ncols, float* out, size_t out_stride) {
  gemm_k_packed_ref<kQ4KSuperBytes>(
      k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride,
      [](const uint8_t* sb, int rr, const BlockQ8_K& a) {
        int32_t dot = 0, mins = 0;
        for (int s = 0; s < 8; ++s) {
          int32_t ds = 0;
          for (int m = 0; m < 8; ++m)
            for (int i = 0; i < 4; ++i) {
              const uint8_t q = sb[kQ4KNibbles + 512 * (s / 2) + 64 * m + 4 * rr + i];
              ds += ((s % 2 ? q >> 4 : q & 0xF)) * a.qs[32 * s + 4 * m + i];
            }
          dot += ds * q4_k_scale(sb, s, rr);
          mins += (a.bsums[2 * s] + a.bsums[2 * s + 1]) * q4_k_min(sb, s, rr);
        }
        uint16_t d, dmin;
        std::memcpy(&d, sb + 2 * rr, 2);
        std::memcpy(&dmin, sb + 32 + 2 * rr, 2);
        return a.d * (fp16_to_f32(d) * static_cast<float>(dot) - fp16_to_f32(dmin) * static_cast<float>(mins));
      });
}

// Q6_K: w = d * sc_s * (q - 32) per sub-block s of 16, against Q8_K.
void gemm_q6_k_packed_ref(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride,
                          int ncols, float* out, size_t out_stride) {
  gemm_k_packed_ref<kQ6KSuperBytes>(
      k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride,
      [](const uint8_t* sb, int rr, const BlockQ8_K& a) {
        int32_t total = 0;
        for (int s = 0; s < 16; ++s) {
          int32_t dot = 0;
          for (int w16 = 16 * s; w16 < 16 * s + 16; ++w16) {
            const Q6Pos p = q6_pos(w16, rr);
            const int q = ((sb[p.nib] >> p.nib_shift) & 0xF) | (((sb[p.hi] >> p.hi_shift) & 3) << 4);
            dot += (q - 32) * a.qs[w16];
          }
          total += dot * static_cast<int8_t>(sb[32 + 16 * s + rr]);
        }
        uint16_t d;
        std::memcpy(&d, sb + 2 * rr, 2);
        return a.d * fp16_to_f32(d) * static_cast<float>(total);
      });
}

void gemm_q8_0_packed_ref(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
                          size_t act_stride, int ncols, float* out, size_t out_stride) {
  gemm_packed_ref<TensorType::Q8_0>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}

}  // namespace brisk::kernels
