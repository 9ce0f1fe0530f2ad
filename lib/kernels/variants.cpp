// SPDX-License-Identifier: MIT
#include "kernels/variants.h"

#include <array>
#include <cstring>
#include <string>

#include "kernels/isa_tables.h"
#include "kernels/packed.h"

namespace brisk::kernels {

const char* col_class_name(ColClass c) {
  switch (c) {
    case ColClass::one: return "1";
    case ColClass::two: return "2";
    case ColClass::few: return "3-4";
    case ColClass::batch: return "5-31";
    case ColClass::prompt: return "32+";
  }
  return "?";
}

namespace {
constexpr int kIsaCount = 4;  // the values of Isa
constexpr int kTypeIds = 64;  // ggml type ids are below this

// "<isa>.<layout>.<type>", made once and then only read.
const char* default_name(Isa isa, bool packed, TensorType t) {
  static const auto* names = [] {
    auto* v = new std::array<std::string, kIsaCount * 2 * kTypeIds>();
    for (int i = 0; i < kIsaCount; ++i)
      for (int p = 0; p < 2; ++p)
        for (uint32_t id = 0; id < kTypeIds; ++id)
          (*v)[(i * 2 + p) * kTypeIds + id] = std::string(isa_name(static_cast<Isa>(i))) +
                                              (p ? ".packed." : ".rows.") + type_traits(id).name;
    return v;
  }();
  const uint32_t id = static_cast<uint32_t>(t);
  return id < kTypeIds ? (*names)[(static_cast<int>(isa) * 2 + (packed ? 1 : 0)) * kTypeIds + id].c_str() : "?";
}
}  // namespace

std::vector<KernelVariant> matmul_variants(TensorType t) {
  std::vector<KernelVariant> out;
  for (int i = 0; i <= static_cast<int>(active_isa()); ++i) {
    const Isa isa = static_cast<Isa>(i);
    if (!isa_supported(isa)) continue;
    if (const MatmulKernel* k = matmul_kernel_for(t, isa); k && !k->packed)
      out.push_back({default_name(isa, false, t), isa, false, 1, INT_MAX, k});
    if (const MatmulKernel* k = packed_matmul_kernel_for(t, isa); k && k->packed)
      out.push_back({default_name(isa, true, t), isa, true, 1, INT_MAX, k});
  }
#if !defined(BRISK_NO_X86_KERNELS)
  if (static_cast<int>(active_isa()) >= static_cast<int>(Isa::avx2)) avx2_extra_variants(t, out);
  if (static_cast<int>(active_isa()) >= static_cast<int>(Isa::avx512)) avx512_extra_variants(t, out);
  if (active_isa() == Isa::amx) amx_extra_variants(t, out);
#endif
  return out;
}

const KernelVariant* find_variant(const std::vector<KernelVariant>& variants, const char* name) {
  for (const KernelVariant& v : variants)
    if (std::strcmp(v.name, name) == 0) return &v;
  return nullptr;
}

// Out of line and in a file built without ISA flags (variants.h).
void append_variant(std::vector<KernelVariant>& out, const KernelVariant& v) { out.push_back(v); }

}  // namespace brisk::kernels
