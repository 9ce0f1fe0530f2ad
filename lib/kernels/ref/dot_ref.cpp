// SPDX-License-Identifier: MIT
// Reference dot products. Written for clarity: each block is first unpacked
// into plain integer levels and per-sub-block scales, then multiplied out.
// Integer sums stay in int32 (the largest, Q6_K, is below 2^28 per
// super-block), so the only float rounding is one multiply-add per block,
// as in ggml's generic code.
#include "kernels/ref/dot_ref.h"

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/quant_internal.h"

namespace brisk::kernels::ref {

using namespace brisk::quant;
using brisk::quant::detail::get_scale_min_k4;

namespace {

// Unpacked K-quant super-block: level of each weight and the integer
// scale (and min) of each sub-block.
struct LevelsK {
  int level[QK_K];
  int scale[QK_K / 16];  // Q4_K/Q5_K use the first 8 (sub-blocks of 32)
  int min[QK_K / 32];
};

void unpack_q4_k(const BlockQ4_K& b, LevelsK* u) {
  for (int j = 0; j < QK_K / 32; ++j) {
    uint8_t sc, m;
    get_scale_min_k4(j, b.scales, &sc, &m);
    u->scale[j] = sc;
    u->min[j] = m;
  }
  // Each 32 bytes of qs hold two sub-blocks: low nibbles, then high nibbles.
  for (int chunk = 0; chunk < QK_K / 64; ++chunk) {
    const uint8_t* q = b.qs + 32 * chunk;
    for (int l = 0; l < 32; ++l) {
      u->level[64 * chunk + l] = q[l] & 0xF;
      u->level[64 * chunk + 32 + l] = q[l] >> 4;
    }
  }
}

void unpack_q5_k(const BlockQ5_K& b, LevelsK* u) {
  for (int j = 0; j < QK_K / 32; ++j) {
    uint8_t sc, m;
    get_scale_min_k4(j, b.scales, &sc, &m);
    u->scale[j] = sc;
    u->min[j] = m;
  }
  // As Q4_K, plus a fifth bit: bit 2*chunk of qh[l] for the low-nibble
  // sub-block, bit 2*chunk+1 for the high one.
  for (int chunk = 0; chunk < QK_K / 64; ++chunk) {
    const uint8_t* q = b.qs + 32 * chunk;
    for (int l = 0; l < 32; ++l) {
      const int hi0 = (b.qh[l] >> (2 * chunk)) & 1;
      const int hi1 = (b.qh[l] >> (2 * chunk + 1)) & 1;
      u->level[64 * chunk + l] = (q[l] & 0xF) | (hi0 << 4);
      u->level[64 * chunk + 32 + l] = (q[l] >> 4) | (hi1 << 4);
    }
  }
}

void unpack_q6_k(const BlockQ6_K& b, LevelsK* u) {
  for (int j = 0; j < QK_K / 16; ++j) u->scale[j] = b.scales[j];
  // Two halves of 128; in each, ql[0..64) carries 4 low bits of four groups
  // of 32 (nibbles) and qh[0..32) their 2 high bits. Levels are offset by 32.
  for (int half = 0; half < 2; ++half) {
    const uint8_t* ql = b.ql + 64 * half;
    const uint8_t* qh = b.qh + 32 * half;
    int* lv = u->level + 128 * half;
    for (int l = 0; l < 32; ++l) {
      lv[l + 0] = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
      lv[l + 32] = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
      lv[l + 64] = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      lv[l + 96] = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
    }
  }
}

// sum_j scale[j] * sum_{i in sub-block j} level[i]*a[i], sub-blocks of `sub` weights.
int32_t scaled_level_dot(const LevelsK& u, const int8_t* a, int sub) {
  int32_t total = 0;
  for (int j = 0; j < QK_K / sub; ++j) {
    int32_t s = 0;
    for (int i = j * sub; i < (j + 1) * sub; ++i) s += u.level[i] * a[i];
    total += u.scale[j] * s;
  }
  return total;
}

// sum_j min[j] * (sum of activations in sub-block j of 32), from the
// activation's per-16 sums.
int32_t min_dot(const LevelsK& u, const BlockQ8_K& a) {
  int32_t total = 0;
  for (int j = 0; j < QK_K / 32; ++j) total += u.min[j] * (a.bsums[2 * j] + a.bsums[2 * j + 1]);
  return total;
}

}  // namespace

float dot_f32_f32(int64_t k, const void* w, const void* act) {
  const auto* x = static_cast<const float*>(w);
  const auto* a = static_cast<const float*>(act);
  float sum = 0;
  for (int64_t i = 0; i < k; ++i) sum += x[i] * a[i];
  return sum;
}

float dot_f16_f32(int64_t k, const void* w, const void* act) {
  const auto* x = static_cast<const uint16_t*>(w);
  const auto* a = static_cast<const float*>(act);
  float sum = 0;
  for (int64_t i = 0; i < k; ++i) sum += fp16_to_f32(x[i]) * a[i];
  return sum;
}

float dot_bf16_f32(int64_t k, const void* w, const void* act) {
  const auto* x = static_cast<const uint16_t*>(w);
  const auto* a = static_cast<const float*>(act);
  float sum = 0;
  for (int64_t i = 0; i < k; ++i) sum += bf16_to_f32(x[i]) * a[i];
  return sum;
}

float dot_q8_0_q8_0(int64_t k, const void* w, const void* act) {
  const auto* x = static_cast<const BlockQ8_0*>(w);
  const auto* a = static_cast<const BlockQ8_0*>(act);
  float sum = 0;
  for (int64_t b = 0; b < k / QK8_0; ++b) {
    int32_t s = 0;
    for (int j = 0; j < QK8_0; ++j) s += x[b].qs[j] * a[b].qs[j];
    sum += static_cast<float>(s) * (fp16_to_f32(x[b].d) * fp16_to_f32(a[b].d));
  }
  return sum;
}

float dot_q4_0_q8_0(int64_t k, const void* w, const void* act) {
  const auto* x = static_cast<const BlockQ4_0*>(w);
  const auto* a = static_cast<const BlockQ8_0*>(act);
  float sum = 0;
  for (int64_t b = 0; b < k / QK4_0; ++b) {
    int32_t s = 0;
    for (int j = 0; j < QK4_0 / 2; ++j) {
      s += ((x[b].qs[j] & 0xF) - 8) * a[b].qs[j];
      s += ((x[b].qs[j] >> 4) - 8) * a[b].qs[j + QK4_0 / 2];
    }
    sum += static_cast<float>(s) * (fp16_to_f32(x[b].d) * fp16_to_f32(a[b].d));
  }
  return sum;
}

// Q4_1 weights are d*q + m; the activation's s = d_a * sum(q_a) makes the
// m term a single multiply per block.
float dot_q4_1_q8_1(int64_t k, const void* w, const void* act) {
  const auto* x = static_cast<const BlockQ4_1*>(w);
  const auto* a = static_cast<const BlockQ8_1*>(act);
  float sum = 0;
  for (int64_t b = 0; b < k / QK4_1; ++b) {
    int32_t s = 0;
    for (int j = 0; j < QK4_1 / 2; ++j) {
      s += (x[b].qs[j] & 0xF) * a[b].qs[j];
      s += (x[b].qs[j] >> 4) * a[b].qs[j + QK4_1 / 2];
    }
    sum += static_cast<float>(s) * (fp16_to_f32(x[b].d) * fp16_to_f32(a[b].d)) +
           fp16_to_f32(x[b].m) * fp16_to_f32(a[b].s);
  }
  return sum;
}

// Q4_K/Q5_K weights are d*sc_j*q - dmin*m_j per sub-block j of 32; the two
// differ only in how a block unpacks.
template <class Block, void (*Unpack)(const Block&, LevelsK*)>
float dot_k_with_mins(int64_t k, const void* w, const void* act) {
  const auto* x = static_cast<const Block*>(w);
  const auto* a = static_cast<const BlockQ8_K*>(act);
  float sum = 0;
  LevelsK u;
  for (int64_t b = 0; b < k / QK_K; ++b) {
    Unpack(x[b], &u);
    const int32_t qsum = scaled_level_dot(u, a[b].qs, 32);
    const int32_t msum = min_dot(u, a[b]);
    sum += fp16_to_f32(x[b].d) * a[b].d * static_cast<float>(qsum) -
           fp16_to_f32(x[b].dmin) * a[b].d * static_cast<float>(msum);
  }
  return sum;
}

float dot_q4_k_q8_k(int64_t k, const void* w, const void* act) {
  return dot_k_with_mins<BlockQ4_K, unpack_q4_k>(k, w, act);
}

float dot_q5_k_q8_k(int64_t k, const void* w, const void* act) {
  return dot_k_with_mins<BlockQ5_K, unpack_q5_k>(k, w, act);
}

// Q6_K weights are d*sc_j*(q-32) per sub-block j of 16, sc_j signed.
float dot_q6_k_q8_k(int64_t k, const void* w, const void* act) {
  const auto* x = static_cast<const BlockQ6_K*>(w);
  const auto* a = static_cast<const BlockQ8_K*>(act);
  float sum = 0;
  LevelsK u;
  for (int64_t b = 0; b < k / QK_K; ++b) {
    unpack_q6_k(x[b], &u);
    const int32_t qsum = scaled_level_dot(u, a[b].qs, 16);
    sum += fp16_to_f32(x[b].d) * a[b].d * static_cast<float>(qsum);
  }
  return sum;
}

}  // namespace brisk::kernels::ref
