// SPDX-License-Identifier: MIT
// Every matrix kernel this machine can run for a weight type, by name, so
// that the planner (model/kernel_plan.h) can time them on a model's own
// matrices and the tests can hold each one to the scalar reference.
//
// The kernel tables of matmul.h are each ISA's default; a variant is any
// other way to compute the same product (another prefetch scheme, another
// stream count, another instruction set such as AMX) that may win on some
// machine and lose on another. Which one wins is measured, not assumed.
#pragma once
#include <climits>
#include <vector>

#include "core/tensor_type.h"
#include "kernels/matmul.h"

namespace brisk::kernels {

// Column-count classes the plan chooses a kernel for: decode (1 column),
// two sequences (2), a few (3-4), a batch of sequences (5-31), prompt
// chunks (32+). Two columns have a class of their own: the commonest
// batch, and a width where one weight stream and two per thread trade
// places from machine to machine.
enum class ColClass : int { one = 0, two = 1, few = 2, batch = 3, prompt = 4 };
constexpr int kColClasses = 5;
constexpr ColClass col_class(int ncols) {
  return ncols <= 1    ? ColClass::one
         : ncols == 2  ? ColClass::two
         : ncols <= 4  ? ColClass::few
         : ncols < 32  ? ColClass::batch
                       : ColClass::prompt;
}
const char* col_class_name(ColClass c);  // "1", "2", "3-4", "5-31", "32+"

struct KernelVariant {
  // Stable identifier written into plan caches: "<isa>.<layout>.<type>" for
  // an ISA's default table, plus ".<what differs>" for the others, e.g.
  // "avx512.packed.q4_0", "avx512.packed.q4_0.t0", "amx.packed.q4_0".
  const char* name = nullptr;
  Isa isa = Isa::scalar;
  bool packed = false;  // reads the packed layout of packed.h, not GGUF rows
  // The planner tries it only for column counts in [min_cols, max_cols]
  // (a kernel that only makes sense for prompts says so here).
  int min_cols = 1;
  int max_cols = INT_MAX;
  const MatmulKernel* kernel = nullptr;
  // The planner's baseline for its layout where its ISA is the active one,
  // instead of the ISA's default table: a kernel that measured faster on
  // every shape where the CPU has what it needs (the AVX-VNNI kernels), so
  // that a plan made while memory is contended, which cannot tell them
  // apart, and a fixed plan keep the better one.
  bool baseline = false;
};

// out.push_back(v), compiled without any ISA's flags: the per-ISA hooks below
// live in files built with AVX-512 (or other) flags, where instantiating a
// std::vector member could hand those encodings to every caller (see
// kernels/avx512/common.h on the ODR caution).
void append_variant(std::vector<KernelVariant>& out, const KernelVariant& v);

// The variants for weight type t that this CPU and OS can run, on
// instruction sets up to active_isa(): each ISA's default row-major and
// packed tables first, then the per-ISA extras.
std::vector<KernelVariant> matmul_variants(TensorType t);
// The variant with this name for type t, or nullptr (unknown, or not
// runnable here).
const KernelVariant* find_variant(const std::vector<KernelVariant>& variants, const char* name);

// Per-ISA extras (isa_tables.h style hooks): append variants beyond the
// default tables. Each file that defines kernels for an ISA defines its hook.
void avx2_extra_variants(TensorType t, std::vector<KernelVariant>& out);
void avx512_extra_variants(TensorType t, std::vector<KernelVariant>& out);
void amx_extra_variants(TensorType t, std::vector<KernelVariant>& out);

}  // namespace brisk::kernels
