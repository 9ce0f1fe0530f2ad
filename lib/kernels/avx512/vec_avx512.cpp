// SPDX-License-Identifier: MIT
// avx512 attention vector kernels (see kernels/vec.h). Like every file here it
// avoids inline helpers of shared headers (see common.h: ODR across ISAs).
#include "kernels/avx512/common.h"
#include "kernels/vec.h"
#include "quant/blocks.h"
#include "quant/quant.h"

namespace brisk::kernels {

namespace {

constexpr int W = 16;

float hsum(__m512 v) {
  return _mm512_reduce_add_ps(v);
}

float dot(const float* a, const float* b, int n) {
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  int i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc0);
    acc1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + W), _mm512_loadu_ps(b + i + W), acc1);
  }
  for (; i + W <= n; i += W) acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc0);
  float s = hsum(_mm512_add_ps(acc0, acc1));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

void axpy(float* y, float a, const float* x, int n) {
  const __m512 va = _mm512_set1_ps(a);
  int i = 0;
  for (; i + W <= n; i += W) _mm512_storeu_ps(y + i, _mm512_fmadd_ps(va, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
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
      for (; i + W <= n; i += W) _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + i))));
      for (; i < n; ++i) dst[i] = _cvtsh_ss(h[i]);
      return;
    }
    case TensorType::Q8_0: {
      const quant::BlockQ8_0* b = static_cast<const quant::BlockQ8_0*>(src);
      for (int blk = 0; blk < n / 32; ++blk) {
        const __m512 d = _mm512_set1_ps(_cvtsh_ss(b[blk].d));
        for (int j = 0; j < 32; j += W) {
          const __m512i q = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b[blk].qs + j)));
          _mm512_storeu_ps(dst + blk * 32 + j, _mm512_mul_ps(d, _mm512_cvtepi32_ps(q)));
        }
      }
      return;
    }
    default:
      quant::dequantize_row(type, src, dst, n);
  }
}

// silu(g) * u = g * u / (1 + e^-g).
void swiglu(float* gate, const float* up, int64_t n) {
  int64_t i = 0;
  const __m512 one = _mm512_set1_ps(1.0f);
  for (; i + W <= n; i += W) {
    const __m512 g = _mm512_loadu_ps(gate + i);
    const __m512 e = avx512::exp512(_mm512_sub_ps(_mm512_setzero_ps(), g));
    _mm512_storeu_ps(gate + i, _mm512_div_ps(_mm512_mul_ps(g, _mm512_loadu_ps(up + i)), _mm512_add_ps(one, e)));
  }
  if (i < n) {
    const __mmask16 m = avx512::lane_mask(n - i);
    const __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
    const __m512 e = avx512::exp512(_mm512_sub_ps(_mm512_setzero_ps(), g));
    _mm512_mask_storeu_ps(gate + i, m, _mm512_div_ps(_mm512_mul_ps(g, _mm512_maskz_loadu_ps(m, up + i)), _mm512_add_ps(one, e)));
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
  for (; i + 16 <= n; i += 16) _mm256_storeu_si256(reinterpret_cast<__m256i*>(h + i), _mm512_cvtps_ph(_mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; ++i) h[i] = avx512::f2h(src[i]);
}

// The bytes as N equal parts read side by side, U 64-byte loads of each in
// turn, into four independent chains of adds (loads alone in the loop, and
// with Touch each part's pages touched ahead); the tail goes to the
// reference.
template <int N, int U, bool Touch>
uint64_t read_streams(const uint8_t* b, size_t bytes) {
  __m512i s[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512()};
  const size_t part = bytes / (N * 64 * U) * (64 * U);
  for (size_t i = 0; i < part; i += 64 * U) {
    if constexpr (Touch)
      for (int n = 0; n < N; ++n) touch_pages_ahead(b + n * part + i, 64 * U);
    for (int u = 0; u < U; ++u)
      for (int n = 0; n < N; ++n)
        s[(u * N + n) % 4] = _mm512_add_epi64(s[(u * N + n) % 4], _mm512_loadu_si512(b + n * part + i + 64 * u));
  }
  const uint64_t sum = _mm512_reduce_add_epi64(_mm512_add_epi64(_mm512_add_epi64(s[0], s[1]), _mm512_add_epi64(s[2], s[3])));
  return sum + ref_vec_kernels()->read_sum(b + N * part, bytes - N * part, 1, false);
}

// Two streams: the two halves side by side, which can read faster than one.
// Four streams, 128 bytes of each in turn: faster than two at some moments
// and slower at others, so the bandwidth probe takes the better of the two:
// a ceiling must be the best read, not the simplest. For the same reason it
// also reads two streams with their pages touched ahead, the trick of the
// decode kernels (kernels/prefetch.h), and one stream with touched pages,
// the form of the one-column (decode) kernels, which at times reads faster
// than any of the others.
uint64_t read_sum(const void* p, size_t bytes, int streams, bool touch_pages) {
  const auto* b = static_cast<const uint8_t*>(p);
  if (streams == 1) return touch_pages ? read_streams<1, 8, true>(b, bytes) : read_streams<1, 8, false>(b, bytes);
  if (touch_pages) return streams == 4 ? read_streams<4, 2, true>(b, bytes) : read_streams<2, 4, true>(b, bytes);
  return streams == 4 ? read_streams<4, 2, false>(b, bytes) : read_streams<2, 4, false>(b, bytes);
}

const VecKernels kTable{to_f32, dot, axpy, avx512::attend, swiglu, from_f32, read_sum};

}  // namespace

const VecKernels* avx512_vec_kernels() { return &kTable; }

}  // namespace brisk::kernels
