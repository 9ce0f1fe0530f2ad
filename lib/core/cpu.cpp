// SPDX-License-Identifier: MIT
#include "core/cpu.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define BRISK_X86 1
#endif

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace brisk {

namespace {

#if defined(BRISK_X86)
uint64_t xgetbv0() {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

// Linux hands out the 8 KB tile-data state per process on request (5.16+);
// without the grant the first tile instruction faults. Called once, from
// detect() (cpu_features() is a function-local static).
bool amx_permitted() {
#if defined(__linux__) && defined(SYS_arch_prctl)
  constexpr int kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return ::syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;  // other systems: no known way to ask, so no AMX
#endif
}

CpuFeatures detect() {
  CpuFeatures f;
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = c & (1u << 27);
  const bool fma = c & (1u << 12);
  const bool f16c = c & (1u << 29);
  const bool avx = c & (1u << 28);
  if (!osxsave || !avx) return f;
  const uint64_t xcr0 = xgetbv0();
  const bool os_ymm = (xcr0 & 0x6) == 0x6;      // SSE + AVX state
  const bool os_zmm = (xcr0 & 0xE6) == 0xE6;    // + opmask, ZMM_Hi256, Hi16_ZMM
  if (!os_ymm) return f;
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  const bool avx2 = b & (1u << 5);
  const bool avx512f = b & (1u << 16);
  const bool avx512dq = b & (1u << 17);
  const bool avx512bw = b & (1u << 30);
  const bool avx512vl = b & (1u << 31);
  const bool avx512vnni = c & (1u << 11);
  unsigned a1, b1, c1, d1;
  __cpuid_count(7, 1, a1, b1, c1, d1);
  const bool avxvnni = a1 & (1u << 4);
  const bool avx512bf16 = a1 & (1u << 5);
  f.avx2 = avx2 && fma && f16c;
  f.avx_vnni = f.avx2 && avxvnni;
  // BRISK_AVX_VNNI=0: the AVX2 kernels as on an AVX2 CPU without AVX-VNNI
  // (most desktops), e.g. to compare with a llama.cpp build without it.
  if (const char* e = std::getenv("BRISK_AVX_VNNI"); e && std::strcmp(e, "0") == 0) f.avx_vnni = false;
  f.avx512 = f.avx2 && os_zmm && avx512f && avx512dq && avx512bw && avx512vl;
  f.avx512_vnni = f.avx512 && avx512vnni;
  f.avx512_bf16 = f.avx512 && avx512bf16;
  const bool amx_tile = d & (1u << 24);
  const bool os_tiles = (xcr0 & 0x60000) == 0x60000;  // XTILECFG + XTILEDATA
  if (f.avx512 && amx_tile && os_tiles && amx_permitted()) {
    f.amx_bf16 = d & (1u << 22);
    f.amx_int8 = d & (1u << 25);
  }
  return f;
}

#else
// Not x86: no SIMD kernels to pick, so no features.
CpuFeatures detect() { return {}; }
#endif

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

}  // namespace brisk
