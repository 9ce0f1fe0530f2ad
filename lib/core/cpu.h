// SPDX-License-Identifier: MIT
// What the CPU and the OS together allow: an instruction set counts only if
// CPUID reports it and XGETBV shows the OS saves the register state it needs.
#pragma once

namespace brisk {

struct CpuFeatures {
  bool avx2 = false;        // with FMA and F16C
  bool avx512 = false;      // F, BW, VL, DQ
  bool avx512_vnni = false;
  bool avx512_bf16 = false;
  bool avx_vnni = false;    // VEX-encoded VNNI (AVX2 machines such as Alder Lake); off with BRISK_AVX_VNNI=0
  // AMX tiles with BF16 / INT8 products: CPUID, the OS saving the tile state
  // (XCR0 bits 17-18), and on Linux the per-process permission to use tile
  // data (arch_prctl, asked once at first use) all granted.
  bool amx_bf16 = false;
  bool amx_int8 = false;
};

const CpuFeatures& cpu_features();

}  // namespace brisk
