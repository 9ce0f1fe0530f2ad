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
  bool avx_vnni = false;    // VEX-encoded VNNI (AVX2 machines such as Alder Lake)
};

const CpuFeatures& cpu_features();

}  // namespace brisk
