// SPDX-License-Identifier: MIT
// A scalar model of the AMX tile instructions the AMX kernels use
// (LDTILECFG, TILEZERO, TILELOADD, TILESTORED, TDPBF16PS, TILERELEASE),
// after the Intel SDM's pseudocode, for the tests' build of those kernels
// (kernels/amx/tiles.h). Palette 1: 8 tiles of at most 16 rows x 64 bytes.
//
// The state is per thread, as the hardware's is. Where the hardware raises
// #UD (a tile instruction before a valid configuration, a product whose
// shapes do not match, a tile named twice in one product) the model prints
// what was wrong and aborts, so a test sees the fault as a crash, as it
// would on an AMX machine.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/fp16.h"
#include "core/tensor_type.h"
#include "kernels/matmul.h"

namespace brisk::kernels::amx_model {

// The AMX tables (amx_packed_matmul_kernel's) with their tile instructions
// run by this model; defined by the tests' build of matmul_amx.cpp.
const MatmulKernel* packed_matmul_kernel(TensorType weight_type);

constexpr int kTiles = 8;
constexpr int kMaxRows = 16;
constexpr int kMaxColsb = 64;

struct TileState {
  bool configured = false;
  uint16_t colsb[kTiles] = {};
  uint8_t rows[kTiles] = {};
  alignas(64) uint8_t data[kTiles][kMaxRows * kMaxColsb] = {};
  uint64_t products = 0;  // TDPBF16PS executed, for the tests
};

inline TileState& state() {
  thread_local TileState s;
  return s;
}

[[noreturn]] inline void fault(const char* what, int tile) {
  std::fprintf(stderr, "AMX model: #UD: %s (tile %d)\n", what, tile);
  std::abort();
}

inline void check_tile(int t) {
  const TileState& s = state();
  if (!s.configured) fault("tile instruction without a tile configuration", t);
  if (t < 0 || t >= kTiles) fault("no such tile in palette 1", t);
}

// LDTILECFG: byte 0 palette, byte 1 start_row, bytes 16-47 colsb of tiles
// 0-15 (uint16), bytes 48-63 their rows; all tile data zeroed.
inline void load_config(const void* cfg) {
  const auto* c = static_cast<const uint8_t*>(cfg);
  TileState& s = state();
  if (c[0] == 0) {  // palette 0: the initial state
    s.configured = false;
    return;
  }
  if (c[0] != 1) fault("palette other than 1", -1);
  if (c[1] != 0) fault("start_row not 0", -1);
  for (int i = 2; i < 16; ++i)
    if (c[i]) fault("reserved configuration byte set", -1);
  for (int t = 0; t < 16; ++t) {
    uint16_t colsb;
    std::memcpy(&colsb, c + 16 + 2 * t, 2);
    const uint8_t rows = c[48 + t];
    if (t >= kTiles) {
      if (colsb || rows) fault("configuration of a tile palette 1 lacks", t);
      continue;
    }
    if (colsb > kMaxColsb || rows > kMaxRows || (colsb == 0) != (rows == 0) || colsb % 4)
      fault("tile shape out of range", t);
    s.colsb[t] = colsb;
    s.rows[t] = rows;
  }
  std::memset(s.data, 0, sizeof s.data);
  s.configured = true;
}

inline void release() {
  TileState& s = state();
  s.configured = false;
  std::memset(s.data, 0, sizeof s.data);
}

inline void zero(int t) {
  check_tile(t);
  std::memset(state().data[t], 0, sizeof state().data[t]);
}

// TILELOADD: rows[t] rows of colsb[t] bytes, stride bytes apart; the rest
// of each row zeroed.
inline void load(int t, const void* base, long stride) {
  check_tile(t);
  TileState& s = state();
  if (s.rows[t] == 0) fault("load of an unconfigured tile", t);
  std::memset(s.data[t], 0, sizeof s.data[t]);
  for (int r = 0; r < s.rows[t]; ++r)
    std::memcpy(s.data[t] + kMaxColsb * r, static_cast<const uint8_t*>(base) + stride * r, s.colsb[t]);
}

inline void store(int t, void* base, long stride) {
  check_tile(t);
  TileState& s = state();
  if (s.rows[t] == 0) fault("store of an unconfigured tile", t);
  for (int r = 0; r < s.rows[t]; ++r)
    std::memcpy(static_cast<uint8_t*>(base) + stride * r, s.data[t] + kMaxColsb * r, s.colsb[t]);
}

// A bf16 as the f32 it widens to, input denormals as zero.
inline float bf16_in(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  if ((h & 0x7F80) == 0) h &= 0x8000;
  return bits_to_f32(static_cast<uint32_t>(h) << 16);
}

inline float flush_denormal(float f) {
  const uint32_t bits = f32_to_bits(f);
  return (bits & 0x7F800000u) == 0 ? bits_to_f32(bits & 0x80000000u) : f;
}

// TDPBF16PS c, a, b: c[m][n] (f32) += a[m] pair k . b[k] pair n, over the
// pairs k of a's row, each of the two products added in turn (an FMA with
// round to nearest even; a product of two bf16 is exact in f32), output
// denormals flushed: the intrinsics guide's order. The SDM lets hardware
// keep the even and odd products' sums apart until the end, so the model
// agrees with a real tile within f32 rounding of the sums, not to the bit.
inline void dpbf16ps(int c, int a, int b) {
  check_tile(c);
  check_tile(a);
  check_tile(b);
  TileState& s = state();
  if (c == a || c == b || a == b) fault("a tile named twice in one product", c);
  const int M = s.rows[c], N = s.colsb[c] / 4, K = s.colsb[a] / 4;
  if (M == 0 || s.rows[a] != M || s.colsb[b] != s.colsb[c] || s.rows[b] != K)
    fault("tile shapes that do not multiply", c);
  for (int m = 0; m < M; ++m) {
    float* row = reinterpret_cast<float*>(s.data[c] + kMaxColsb * m);
    for (int k = 0; k < K; ++k) {
      const uint8_t* ap = s.data[a] + kMaxColsb * m + 4 * k;
      for (int n = 0; n < N; ++n) {
        const uint8_t* bp = s.data[b] + kMaxColsb * k + 4 * n;
        float t = row[n];
        t = flush_denormal(__builtin_fmaf(bf16_in(ap), bf16_in(bp), t));
        t = flush_denormal(__builtin_fmaf(bf16_in(ap + 2), bf16_in(bp + 2), t));
        row[n] = t;
      }
    }
  }
  ++s.products;
}

}  // namespace brisk::kernels::amx_model
