#include "kernels/vec.h"
#include "quant/quant.h"

namespace brisk::kernels {

namespace {

void to_f32(TensorType type, const void* src, float* dst, int n) { quant::dequantize_row(type, src, dst, n); }

float dot(const float* a, const float* b, int n) {
  float s = 0;
  for (int i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

void axpy(float* y, float a, const float* x, int n) {
  for (int i = 0; i < n; ++i) y[i] += a * x[i];
}

const VecKernels kRef{to_f32, dot, axpy};

}  // namespace

const VecKernels* ref_vec_kernels() { return &kRef; }

}  // namespace brisk::kernels
