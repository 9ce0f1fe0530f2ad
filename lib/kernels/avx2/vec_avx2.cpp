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

// Four quarters side by side, 64 bytes of each in turn.
uint64_t read_sum4(const uint8_t* b, size_t bytes) {
  __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
  const size_t quarter = bytes / 256 * 64;
  const uint8_t *b1 = b + quarter, *b2 = b + 2 * quarter, *b3 = b + 3 * quarter;
  auto load = [](const uint8_t* q) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q)); };
  for (size_t i = 0; i < quarter; i += 64) {
    s0 = _mm256_add_epi64(s0, _mm256_add_epi64(load(b + i), load(b + i + 32)));
    s1 = _mm256_add_epi64(s1, _mm256_add_epi64(load(b1 + i), load(b1 + i + 32)));
    s2 = _mm256_add_epi64(s2, _mm256_add_epi64(load(b2 + i), load(b2 + i + 32)));
    s3 = _mm256_add_epi64(s3, _mm256_add_epi64(load(b3 + i), load(b3 + i + 32)));
  }
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), _mm256_add_epi64(_mm256_add_epi64(s0, s1), _mm256_add_epi64(s2, s3)));
  return lanes[0] + lanes[1] + lanes[2] + lanes[3] + ref_vec_kernels()->read_sum(b + 4 * quarter, bytes - 4 * quarter, 1);
}

// Two streams: the two halves side by side (as the packed kernels read two
// runs), four independent chains of adds; four streams: read_sum4. The tail
// goes to the reference.
uint64_t read_sum(const void* p, size_t bytes, int streams) {
  const auto* b = static_cast<const uint8_t*>(p);
  if (streams == 4) return read_sum4(b, bytes);
  __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
  const size_t half = bytes / 256 * 128;
  const uint8_t* c = b + half;
  auto load = [](const uint8_t* q) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q)); };
  for (size_t i = 0; i < half; i += 128) {
    s0 = _mm256_add_epi64(s0, load(b + i));
    s1 = _mm256_add_epi64(s1, load(c + i));
    s2 = _mm256_add_epi64(s2, load(b + i + 32));
    s3 = _mm256_add_epi64(s3, load(c + i + 32));
    s0 = _mm256_add_epi64(s0, load(b + i + 64));
    s1 = _mm256_add_epi64(s1, load(c + i + 64));
    s2 = _mm256_add_epi64(s2, load(b + i + 96));
    s3 = _mm256_add_epi64(s3, load(c + i + 96));
  }
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), _mm256_add_epi64(_mm256_add_epi64(s0, s1), _mm256_add_epi64(s2, s3)));
  return lanes[0] + lanes[1] + lanes[2] + lanes[3] + ref_vec_kernels()->read_sum(b + 2 * half, bytes - 2 * half, 1);
}

const VecKernels kTable{to_f32, dot, axpy, avx2::attend, ops::swiglu, from_f32, read_sum};

}  // namespace

const VecKernels* avx2_vec_kernels() { return &kTable; }

}  // namespace brisk::kernels
