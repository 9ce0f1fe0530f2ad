// SPDX-License-Identifier: MIT
// Shared pieces of the AVX-512 kernels (files under avx512/ only).
//
// ODR caution: every file here is compiled with AVX-512 flags. Anything with
// external linkage that another, baseline file could also instantiate (inline
// functions from shared headers, std:: templates such as std::vector) may be
// emitted here with AVX-512 encodings and then picked by the linker for the
// baseline callers too. So these files keep their helpers `static` or in
// anonymous namespaces, use no std:: templates, and convert fp16 with F16C
// instead of calling the inline helpers of core/fp16.h.
#pragma once
// GCC 12 warns inside its own intrinsic headers (_mm512_undefined_* used by
// cvtph/reduce helpers): a known false positive, silenced for those lines.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/matmul.h"
#include "kernels/prefetch.h"
#include "kernels/scratch.h"
#include "kernels/simd/tile_loops.h"

namespace brisk::kernels {
struct AttendArgs;     // kernels/vec.h
struct KernelVariant;  // kernels/variants.h
}

namespace brisk::kernels::avx512 {

// Per type family (matmul_float.cpp, matmul_q.cpp, matmul_k.cpp).
void quantize_f32(const float* x, void* out, int64_t k);
void gemm_f32(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
              size_t act_stride, int ncols, float* out, size_t out_stride);
void gemm_f16(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
              size_t act_stride, int ncols, float* out, size_t out_stride);
void gemm_bf16(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
               size_t act_stride, int ncols, float* out, size_t out_stride);

void quantize_q8_0(const float* x, void* out, int64_t k);
void quantize_q8_1(const float* x, void* out, int64_t k);
void gemm_q8_0(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
               size_t act_stride, int ncols, float* out, size_t out_stride);
void gemm_q4_0(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
               size_t act_stride, int ncols, float* out, size_t out_stride);
void gemm_q4_1(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
               size_t act_stride, int ncols, float* out, size_t out_stride);

void quantize_q8_k(const float* x, void* out, int64_t k);
void gemm_q4_k(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
               size_t act_stride, int ncols, float* out, size_t out_stride);
void gemm_q5_k(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
               size_t act_stride, int ncols, float* out, size_t out_stride);
bool attend(const AttendArgs& a);  // attend.cpp (kernels/vec.h)
void quantize_q8_0_sums(const float* x, void* out, int64_t k);
void gemm_q4_0_packed(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
                      size_t act_stride, int ncols, float* out, size_t out_stride);
void gemm_q6_k_packed(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
                      size_t act_stride, int ncols, float* out, size_t out_stride);
void gemm_q4_k_packed(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
                      size_t act_stride, int ncols, float* out, size_t out_stride);
void gemm_q8_0_packed(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
                      size_t act_stride, int ncols, float* out, size_t out_stride);
// Packed F16/BF16 (matmul_packed_float.cpp; need AVX-512 BF16 as well).
void quantize_packed_float_act(const float* x, void* out, int64_t k);
void gemm_f16_packed(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
                     size_t act_stride, int ncols, float* out, size_t out_stride);
void gemm_bf16_packed(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
                      size_t act_stride, int ncols, float* out, size_t out_stride);
void gemm_q6_k(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
               size_t act_stride, int ncols, float* out, size_t out_stride);
// The packed kernels' variants beyond the default tables (kernels/variants.h):
// *n entries (matmul_packed.cpp, matmul_packed_float.cpp).
const KernelVariant* packed_decode_variants(TensorType t, int* n);
const KernelVariant* packed_k_decode_variants(TensorType t, int* n);  // matmul_packed_k.cpp
const KernelVariant* packed_float_decode_variants(TensorType t, int* n);

// fp16 <-> f32 with F16C: bit-exact with core/fp16.h for every non-NaN value
// (both round to nearest even and handle subnormals and overflow the same).
static inline float h2f(uint16_t h) { return _cvtsh_ss(h); }
static inline uint16_t f2h(float f) {
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
static inline uint16_t load_u16(const void* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

// Keeps v in a register. A vector loaded once and used twice (a nibble
// line's and / andnot) is otherwise folded into both instructions by GCC and
// loaded twice; where the load ports bind a loop that costs its speed.
static inline void in_register(__m512i& v) { asm("" : "+v"(v)); }

// The 4-byte group i (0..3) of a 16-byte broadcast, in every 32-bit lane:
// four activation groups for one load (and four in-lane shuffles) instead of
// four broadcast loads.
template <int I>
static inline __m512i dword_of(__m512i lanes4) {
  return _mm512_shuffle_epi32(lanes4, static_cast<_MM_PERM_ENUM>(0x55 * I));
}
static inline __m512i dword_of(__m512i lanes4, int i) {
  switch (i & 3) {
    case 0: return dword_of<0>(lanes4);
    case 1: return dword_of<1>(lanes4);
    case 2: return dword_of<2>(lanes4);
    default: return dword_of<3>(lanes4);
  }
}
static inline __m512i broadcast_16_bytes(const void* p) {
  return _mm512_broadcast_i32x4(_mm_loadu_si128(static_cast<const __m128i*>(p)));
}

// Sum of the 16 floats. The order differs from a scalar loop; callers accept
// float-rounding differences (the contract asks for tolerance, not bits).
static inline float hsum(__m512 v) { return _mm512_reduce_add_ps(v); }

// Mask of the first n (0..16) 32-bit lanes, or n 16-bit elements.
static inline __mmask16 lane_mask(int64_t n) {
  return n >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << n) - 1);
}
// Mask of the first n bytes (n <= 0: none, n >= 64: all).
static inline __mmask64 byte_mask(int64_t n) {
  if (n <= 0) return 0;
  return n >= 64 ? ~static_cast<__mmask64>(0) : ((static_cast<__mmask64>(1) << n) - 1);
}

// e^x by Cephes' expf method: x = n ln2 + r with |r| <= ln2/2, a degree-6
// polynomial for e^r, then scaling by 2^n (vscalefps: overflow gives inf).
// Relative error ~1e-7, as expf; below -87 it returns ~0 instead of
// subnormals.
static inline __m512 exp512(__m512 x) {
  x = _mm512_max_ps(x, _mm512_set1_ps(-87.0f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  const __m512 y = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(y, n);
}

// The row-major kernels' tile loops (simd/tile_loops.h).
using simd::for_each_tile;

}  // namespace brisk::kernels::avx512
