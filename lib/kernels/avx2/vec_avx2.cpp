// SPDX-License-Identifier: MIT
// avx2 attention vector kernels (see kernels/vec.h). Like every file here it
// avoids inline helpers of shared headers (see common.h: ODR across ISAs).
#include "kernels/avx2/common.h"
#include "kernels/ops.h"
#include "kernels/vec.h"
#include "quant/blocks.h"
#include "quant/quant.h"

namespace brisk::kernels {

namespace {

constexpr int W = 8;

float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

float dot(const float* a, const float* b, int n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + W), _mm256_loadu_ps(b + i + W), acc1);
  }
  for (; i + W <= n; i += W) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
  float s = hsum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

void axpy(float* y, float a, const float* x, int n) {
  const __m256 va = _mm256_set1_ps(a);
  int i = 0;
  for (; i + W <= n; i += W) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] += a * x[i];
}

void to_f32(TensorType type, const void* src, float* dst, int n) {
  switch (type) {
    case TensorType::F32: {
      const float* f = static_cast<const float*>(src);
      for (int i = 0; i < n; ++i) dst[i] = f[i];
      return;
    }
    case TensorType::F16: {
      const uint16_t* h = static_cast<const uint16_t*>(src);
      int i = 0;
      for (; i + W <= n; i += W) _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i))));
      for (; i < n; ++i) dst[i] = _cvtsh_ss(h[i]);
      return;
    }
    case TensorType::Q8_0: {
      const quant::BlockQ8_0* b = static_cast<const quant::BlockQ8_0*>(src);
      for (int blk = 0; blk < n / 32; ++blk) {
        const __m256 d = _mm256_set1_ps(_cvtsh_ss(b[blk].d));
        for (int j = 0; j < 32; j += W) {
          const __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b[blk].qs + j)));
          _mm256_storeu_ps(dst + blk * 32 + j, _mm256_mul_ps(d, _mm256_cvtepi32_ps(q)));
        }
      }
      return;
    }
    default:
      quant::dequantize_row(type, src, dst, n);
  }
}

// F16 with F16C (round to nearest even, as the reference's bit-exact
// conversion); other types by the reference.
void from_f32(TensorType type, const float* src, void* dst, int n) {
  if (type != TensorType::F16) {
    quant::quantize_row(type, src, dst, n);
    return;
  }
  uint16_t* h = static_cast<uint16_t*>(dst);
  int i = 0;
  for (; i + 8 <= n; i += 8) _mm_storeu_si128(reinterpret_cast<__m128i*>(h + i), _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; ++i) h[i] = avx2::f2h(src[i]);
}

// The bytes as N equal parts read side by side, U 32-byte loads of each in
// turn, into four independent chains of adds (with Touch, each part's pages
// touched ahead); the tail goes to the reference. One, two or four (see
// avx512/vec_avx512.cpp, read_sum).
template <int N, int U, bool Touch>
uint64_t read_streams(const uint8_t* b, size_t bytes) {
  __m256i s[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256()};
  const size_t part = bytes / (N * 32 * U) * (32 * U);
  for (size_t i = 0; i < part; i += 32 * U) {
    if constexpr (Touch)
      for (int n = 0; n < N; ++n) touch_pages_ahead(b + n * part + i, 32 * U);
    for (int u = 0; u < U; ++u)
      for (int n = 0; n < N; ++n)
        s[(u * N + n) % 4] = _mm256_add_epi64(
            s[(u * N + n) % 4], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + n * part + i + 32 * u)));
  }
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), _mm256_add_epi64(_mm256_add_epi64(s[0], s[1]), _mm256_add_epi64(s[2], s[3])));
  return lanes[0] + lanes[1] + lanes[2] + lanes[3] +
         ref_vec_kernels()->read_sum(b + N * part, bytes - N * part, 1, false);
}

uint64_t read_sum(const void* p, size_t bytes, int streams, bool touch_pages) {
  const auto* b = static_cast<const uint8_t*>(p);
  if (streams == 1) return touch_pages ? read_streams<1, 8, true>(b, bytes) : read_streams<1, 8, false>(b, bytes);
  if (touch_pages) return streams == 4 ? read_streams<4, 2, true>(b, bytes) : read_streams<2, 4, true>(b, bytes);
  return streams == 4 ? read_streams<4, 2, false>(b, bytes) : read_streams<2, 4, false>(b, bytes);
}

const VecKernels kTable{to_f32, dot, axpy, avx2::attend, ops::swiglu, from_f32, read_sum};

}  // namespace

const VecKernels* avx2_vec_kernels() { return &kTable; }

}  // namespace brisk::kernels
