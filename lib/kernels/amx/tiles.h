// SPDX-License-Identifier: MIT
// The AMX tile instructions as matmul_amx.cpp uses them: the compiler's
// intrinsics, or, where BRISK_AMX_MODEL is defined (the tests' second build
// of that file, lib/CMakeLists.txt), a scalar model of them (tile_model.h).
//
// Why a model: the tile instructions need a CPU with AMX and a kernel that
// grants the tile state, which most machines that build and test brisk
// lack. Run through the model, the AMX kernels' tiling, strides, tails,
// dequantized B tiles and stores are tested wherever AVX-512 BF16 runs, and
// the model faults where the hardware would.
//
// Macros rather than functions: GCC's intrinsics paste the tile number into
// the instruction text, so it must be a literal at every use.
#pragma once

#if defined(BRISK_AMX_MODEL)
#include "kernels/amx/tile_model.h"
#define BRISK_TILE_CONFIG(cfg) ::brisk::kernels::amx_model::load_config(cfg)
#define BRISK_TILE_RELEASE() ::brisk::kernels::amx_model::release()
#define BRISK_TILE_ZERO(t) ::brisk::kernels::amx_model::zero(t)
#define BRISK_TILE_LOAD(t, base, stride) ::brisk::kernels::amx_model::load(t, base, stride)
#define BRISK_TILE_STORE(t, base, stride) ::brisk::kernels::amx_model::store(t, base, stride)
#define BRISK_TILE_DPBF16PS(c, a, b) ::brisk::kernels::amx_model::dpbf16ps(c, a, b)
#else
#include "kernels/avx512/common.h"  // immintrin.h, as every kernel file includes it
#define BRISK_TILE_CONFIG(cfg) _tile_loadconfig(cfg)
#define BRISK_TILE_RELEASE() _tile_release()
#define BRISK_TILE_ZERO(t) _tile_zero(t)
#define BRISK_TILE_LOAD(t, base, stride) _tile_loadd(t, base, stride)
#define BRISK_TILE_STORE(t, base, stride) _tile_stored(t, base, stride)
#define BRISK_TILE_DPBF16PS(c, a, b) _tile_dpbf16ps(c, a, b)
#endif
