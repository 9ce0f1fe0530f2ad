// SPDX-License-Identifier: MIT
// AVX2 kernels for the 32-weight block types: Q8_0 and Q4_0 (against Q8_0
// activations) and Q4_1 (against Q8_1). The tiles are simd/q_tiles.h's,
// in its lane layout with two blocks per ymm; this file holds what is
// AVX2's own: the activation repacking, the weight loaders and the dot step.
//
// Without VNNI the byte products are vpmaddubsw (u8 x s8 -> pairs of int16,
// saturating) + vpmaddwd with ones (-> int32):
//  - Q4: nibbles 0..15 are the unsigned side; both halves' pairs fit int16
//    (2 * 2 * 15 * 127 < 32767), so they are added before vpmaddwd. The -8
//    offset is removed through a per-column correction (-8 * activation
//    partial sums), computed once when the activations are repacked.
//  - Q8_0: |w| x sign(a, w) (ggml's trick) keeps each pair within int16;
//    the halves are widened separately since their sum could overflow.
#include "kernels/avx2/simd_traits.h"
#include "kernels/simd/q_tiles.h"
#include "quant/blocks.h"

namespace brisk::kernels::avx2 {

using quant::BlockQ8_0;
using quant::BlockQ8_1;

namespace {

using ActGroup = simd::QActGroup<Vec>;
static_assert(sizeof(ActGroup) == 128);

using Kind = simd::QKind;

// Repacks one column of nb activation blocks into ngroups ActGroups (the
// last group zero-padded: zero activations and scales add nothing).
template <Kind K>
void pack_column(const uint8_t* src, int64_t nb, ActGroup* dst) {
  const int64_t ngroups = (nb + 1) / 2;
  for (int64_t g = 0; g < ngroups; ++g) {
    ActGroup& a = dst[g];
    std::memset(&a, 0, sizeof a);
    for (int j = 0; j < 2 && g * 2 + j < nb; ++j) {
      float d, s = 0;
      const int8_t* qs;
      if constexpr (K == Kind::q4_1) {
        const auto* b = reinterpret_cast<const BlockQ8_1*>(src) + g * 2 + j;
        d = h2f(b->d);
        s = h2f(b->s);
        qs = b->qs;
      } else {
        const auto* b = reinterpret_cast<const BlockQ8_0*>(src) + g * 2 + j;
        d = h2f(b->d);
        qs = b->qs;
      }
      std::memcpy(a.lo + 16 * j, qs, 16);
      std::memcpy(a.hi + 16 * j, qs + 16, 16);
      for (int l = 0; l < 4; ++l) a.d[4 * j + l] = d;
      if constexpr (K == Kind::q4_1) std::memcpy(&a.extra[4 * j], &s, 4);
    }
    if constexpr (K == Kind::q4_0) {
      // dot = sum(nibble * a) - 8 * sum(a), per int32 slot.
      const __m256i ones8 = _mm256_set1_epi8(1);
      const __m256i pairs = _mm256_add_epi16(
          _mm256_maddubs_epi16(ones8, _mm256_load_si256(reinterpret_cast<const __m256i*>(a.lo))),
          _mm256_maddubs_epi16(ones8, _mm256_load_si256(reinterpret_cast<const __m256i*>(a.hi))));
      const __m256i sum = _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
      _mm256_store_si256(reinterpret_cast<__m256i*>(a.extra),
                         _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(sum, 3)));
    }
  }
}

using WGroup = simd::QWeights<Vec>;

inline __m256 two_scales(float d0, float d1) { return _mm256_set_m128(_mm_set1_ps(d1), _mm_set1_ps(d0)); }

inline __m128i load128(const uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }

// Q4_0 and Q4_1: the 16 nibble bytes of blocks 0 and 1 at qs0 and qs1.
inline void split_nibbles(__m128i b0, __m128i b1, WGroup& g) {
  const __m256i q = _mm256_set_m128i(b1, b0);
  const __m256i nib = _mm256_set1_epi8(0x0F);
  g.lo = _mm256_and_si256(q, nib);
  g.hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), nib);
}

// Tail: only one block left in the group; the other reads as zero (its
// activations are zero too) and no byte past the row is touched.
struct Q4_0W {
  static constexpr int kBlockBytes = 18;
  template <bool Tail>
  static WGroup load(const uint8_t* p, int /*nbl: 1 when Tail*/) {
    WGroup g;
    split_nibbles(load128(p + 2), Tail ? _mm_setzero_si128() : load128(p + 20), g);
    g.d = two_scales(h2f(load_u16(p)), Tail ? 0.0f : h2f(load_u16(p + 18)));
    g.m = _mm256_setzero_ps();
    return g;
  }
};

struct Q4_1W {
  static constexpr int kBlockBytes = 20;
  template <bool Tail>
  static WGroup load(const uint8_t* p, int /*nbl: 1 when Tail*/) {
    WGroup g;
    split_nibbles(load128(p + 4), Tail ? _mm_setzero_si128() : load128(p + 24), g);
    g.d = two_scales(h2f(load_u16(p)), Tail ? 0.0f : h2f(load_u16(p + 20)));
    g.m = two_scales(h2f(load_u16(p + 2)), Tail ? 0.0f : h2f(load_u16(p + 22)));
    return g;
  }
};

struct Q8_0W {
  static constexpr int kBlockBytes = 34;
  template <bool Tail>
  static WGroup load(const uint8_t* p, int /*nbl: 1 when Tail*/) {
    const __m256i y0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2));
    const __m256i y1 = Tail ? _mm256_setzero_si256() : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 36));
    WGroup g;
    g.lo = _mm256_permute2x128_si256(y0, y1, 0x20);  // first halves of blocks 0, 1
    g.hi = _mm256_permute2x128_si256(y0, y1, 0x31);  // second halves
    g.d = two_scales(h2f(load_u16(p)), Tail ? 0.0f : h2f(load_u16(p + 34)));
    g.m = _mm256_setzero_ps();
    return g;
  }
};

// The ISA's pieces of simd::gemm_q.
struct QOps {
  template <Kind K>
  static void pack_column(const uint8_t* src, int64_t nb, ActGroup* dst) {
    avx2::pack_column<K>(src, nb, dst);
  }
  // The int32 sums of one row's 2 blocks against one column's.
  template <Kind K>
  static __m256i dot(const WGroup& w, __m256i alo, __m256i ahi, __m256i extra) {
    const __m256i ones16 = _mm256_set1_epi16(1);
    if constexpr (K == Kind::q8_0) {
      const __m256i plo = _mm256_maddubs_epi16(_mm256_sign_epi8(w.lo, w.lo), _mm256_sign_epi8(alo, w.lo));
      const __m256i phi = _mm256_maddubs_epi16(_mm256_sign_epi8(w.hi, w.hi), _mm256_sign_epi8(ahi, w.hi));
      return _mm256_add_epi32(_mm256_madd_epi16(plo, ones16), _mm256_madd_epi16(phi, ones16));
    } else {
      const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(w.lo, alo), _mm256_maddubs_epi16(w.hi, ahi));
      const __m256i i = _mm256_madd_epi16(p, ones16);
      if constexpr (K == Kind::q4_0) return _mm256_add_epi32(i, extra);
      return i;
    }
  }
};

// Tiles of 2 rows x 3 columns, as many as 16 ymm registers hold.
template <typename W, Kind K>
void gemm_q(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride,
            int ncols, float* out, size_t out_stride) {
  simd::gemm_q<Vec, QOps, W, K, 2, 3>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}

}  // namespace

void gemm_q8_0(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
               size_t act_stride, int ncols, float* out, size_t out_stride) {
  gemm_q<Q8_0W, Kind::q8_0>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}
void gemm_q4_0(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
               size_t act_stride, int ncols, float* out, size_t out_stride) {
  gemm_q<Q4_0W, Kind::q4_0>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}
void gemm_q4_1(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
               size_t act_stride, int ncols, float* out, size_t out_stride) {
  gemm_q<Q4_1W, Kind::q4_1>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}

}  // namespace brisk::kernels::avx2
