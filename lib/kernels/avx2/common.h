// SPDX-License-Identifier: MIT
// Shared pieces of the AVX2 (+FMA, F16C) kernels (files under avx2/ only).
//
// ODR caution: every file here is compiled with AVX2 flags. Anything with
// external linkage that another, baseline file could also instantiate (inline
// functions from shared headers, std:: templates such as std::vector) may be
// emitted here with AVX2 encodings and then picked by the linker for the
// baseline callers too. So these files keep their helpers `static` or in
// anonymous namespaces, use no std:: templates, and convert fp16 with F16C
// instead of calling the inline helpers of core/fp16.h.
#pragma once
// GCC 12 warns inside its own intrinsic headers (_mm*_undefined_* used by
// some helpers): a known false positive, silenced for those lines.
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
struct AttendArgs;
struct KernelVariant;  // kernels/variants.h
}

namespace brisk::kernels::avx2 {

// Pins an accumulator's running value to a register at this point of the
// loop. Without it GCC 12 moves every product of an unrolled tile ahead of
// the adds that consume it, spills them all to the stack and sums them back
// at the end (16 ymm registers cannot hold a tile's products); each
// accumulator update in a tile's inner loop goes through keep().
template <typename V>
__attribute__((always_inline)) static inline void keep(V& v) {
  asm("" : "+x"(v));
}

bool attend(const AttendArgs& a);  // attend.cpp (kernels/vec.h)

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
void gemm_q6_k(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
               size_t act_stride, int ncols, float* out, size_t out_stride);

// The "I16" activation columns of packed F16/BF16 batches (packed.h), the
// same bytes as quantize_packed_i16_act_ref (matmul_packed_float.cpp).
void quantize_packed_i16_act(const float* x, void* out, int64_t k);

// Over packed weights (kernels/packed.h; matmul_packed.cpp), against the
// "Q8_0 with sums" activations.
void quantize_q8_0_sums(const float* x, void* out, int64_t k);
void gemm_q4_0_packed(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
                      size_t act_stride, int ncols, float* out, size_t out_stride);
void gemm_q8_0_packed(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
                      size_t act_stride, int ncols, float* out, size_t out_stride);
// Against Q8_K activations (matmul_packed_k.cpp).
void gemm_q4_k_packed(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
                      size_t act_stride, int ncols, float* out, size_t out_stride);
void gemm_q6_k_packed(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
                      size_t act_stride, int ncols, float* out, size_t out_stride);
// The packed kernels' one-column variants beyond the default tables
// (kernels/variants.h): *n entries (matmul_packed.cpp, matmul_packed_k.cpp).
const KernelVariant* packed_q_decode_variants(TensorType t, int* n);
const KernelVariant* packed_k_decode_variants(TensorType t, int* n);
// Against plain f32 activations (matmul_packed_float.cpp).
void gemm_f16_packed(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
                     size_t act_stride, int ncols, float* out, size_t out_stride);
void gemm_bf16_packed(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
                      size_t act_stride, int ncols, float* out, size_t out_stride);
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

// Sum of the 8 floats (order differs from a scalar loop; callers accept
// float-rounding differences).
static inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
// The row-major kernels' tile loops (simd/tile_loops.h).
using simd::for_each_tile;

}  // namespace brisk::kernels::avx2
