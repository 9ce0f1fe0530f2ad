// SPDX-License-Identifier: MIT
// Fused AVX2 attention (kernels/vec.h, AttendArgs): simd/attend.h in 8-lane
// vectors, for machines without AVX-512, at head_dim 32, 64 and 128.
#include "kernels/avx2/simd_traits.h"
#include "kernels/simd/attend.h"

namespace brisk::kernels::avx2 {

bool attend(const AttendArgs& a) {
  switch (a.head_dim) {
    case 32: return simd::attend_fused<Vec, 4>(a);
    case 64: return simd::attend_fused<Vec, 8>(a);
    case 128: return simd::attend_fused<Vec, 16>(a);
    default: return false;
  }
}

}  // namespace brisk::kernels::avx2
