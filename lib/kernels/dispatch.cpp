// SPDX-License-Identifier: MIT
// Picks the instruction set once at start-up (first use) and the per-type
// kernel tables from it.
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/cpu.h"
#include "core/error.h"
#include "kernels/isa_tables.h"

namespace brisk::kernels {

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::scalar: return "scalar";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
    case Isa::amx: return "amx";
  }
  return "?";
}

bool simd_kernels_built() {
#if defined(BRISK_NO_X86_KERNELS)
  return false;
#else
  return true;
#endif
}

bool isa_supported(Isa isa) {
#if defined(BRISK_NO_X86_KERNELS)
  // A build without the x86 kernels (another architecture): the scalar
  // reference is all there is.
  return isa == Isa::scalar;
#endif
  const CpuFeatures& f = cpu_features();
  switch (isa) {
    case Isa::scalar: return true;
    case Isa::avx2: return f.avx2;
    case Isa::avx512: return f.avx512 && f.avx512_vnni;
    case Isa::amx: return f.avx512 && f.avx512_vnni && f.avx512_bf16 && f.amx_bf16;
  }
  return false;
}

Isa best_supported_isa() {
  if (isa_supported(Isa::amx)) return Isa::amx;
  if (isa_supported(Isa::avx512)) return Isa::avx512;
  if (isa_supported(Isa::avx2)) return Isa::avx2;
  return Isa::scalar;
}

namespace {
Isa choose_isa() {
  Isa best = best_supported_isa();
  const char* env = std::getenv("BRISK_ISA");
  if (!env || !*env || std::strcmp(env, "auto") == 0) return best;
  for (Isa want : {Isa::scalar, Isa::avx2, Isa::avx512, Isa::amx}) {
    if (std::strcmp(env, isa_name(want)) == 0) {
      // Asking for more than the machine has gives the best it has.
      return static_cast<int>(want) <= static_cast<int>(best) ? want : best;
    }
  }
  return best;
}
}  // namespace

Isa active_isa() {
  static const Isa isa = choose_isa();
  return isa;
}

const MatmulKernel* matmul_kernel_for(TensorType t, Isa isa) {
  if (!isa_supported(isa)) return nullptr;
  switch (isa) {
#if !defined(BRISK_NO_X86_KERNELS)
    case Isa::amx: return nullptr;  // row-major weights: the avx512 kernels
    case Isa::avx512: return avx512_matmul_kernel(t);
    case Isa::avx2: return avx2_matmul_kernel(t);
#endif
    case Isa::scalar: return ref_matmul_kernel(t);
    default: return nullptr;
  }
  return nullptr;
}

const MatmulKernel& matmul_kernel(TensorType t) {
  for (int i = static_cast<int>(active_isa()); i >= 0; --i) {
    if (const MatmulKernel* k = matmul_kernel_for(t, static_cast<Isa>(i))) return *k;
  }
  fail(BRISK_ERR_UNSUPPORTED, std::string("no matrix kernel for tensor type ") + type_name(t));
}

const MatmulKernel* packed_matmul_kernel_for(TensorType t, Isa isa) {
  if (!isa_supported(isa)) return nullptr;
  switch (isa) {
#if !defined(BRISK_NO_X86_KERNELS)
    case Isa::amx: return amx_packed_matmul_kernel(t);
    case Isa::avx512: return avx512_packed_matmul_kernel(t);
    case Isa::avx2: return avx2_packed_matmul_kernel(t);
#endif
    case Isa::scalar: return ref_packed_matmul_kernel(t);
    default: return nullptr;
  }
  return nullptr;
}

// Only instruction sets whose packed kernel beats their row-major one pack:
// the scalar packed kernel exists to define the layout and test against.
const MatmulKernel* packed_matmul_kernel(TensorType t) {
  const Isa isa = active_isa();
  return isa == Isa::scalar ? nullptr : packed_matmul_kernel_for(t, isa);
}

size_t act_column_bytes(const MatmulKernel& kern, int64_t k) {
  return kern.act_bytes ? kern.act_bytes(k) : row_bytes(kern.act_type, k);
}

}  // namespace brisk::kernels

#include "kernels/vec.h"

namespace brisk::kernels {

const VecKernels* vec_kernels_for(Isa isa) {
  if (!isa_supported(isa)) return nullptr;
  switch (isa) {
#if !defined(BRISK_NO_X86_KERNELS)
    case Isa::amx:  // AMX adds no vector kernels
    case Isa::avx512: return avx512_vec_kernels();
    case Isa::avx2: return avx2_vec_kernels();
#endif
    case Isa::scalar: return ref_vec_kernels();
    default: return nullptr;
  }
  return nullptr;
}

const VecKernels& vec_kernels() {
  static const VecKernels* k = vec_kernels_for(active_isa());
  return *k;
}

}  // namespace brisk::kernels
