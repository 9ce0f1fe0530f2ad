// SPDX-License-Identifier: MIT
// Fused AVX-512 attention (kernels/vec.h, AttendArgs): simd/attend.h in
// 16-lane vectors, at head_dim 64 and 128.
#include "kernels/avx512/simd_traits.h"
#include "kernels/simd/attend.h"

namespace brisk::kernels::avx512 {

bool attend(const AttendArgs& a) {
  switch (a.head_dim) {
    case 64: return simd::attend_fused<Vec, 4>(a);
    case 128: return simd::attend_fused<Vec, 8>(a);
    default: return false;
  }
}

}  // namespace brisk::kernels::avx512
