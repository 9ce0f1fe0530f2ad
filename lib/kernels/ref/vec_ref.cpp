// SPDX-License-Identifier: MIT
#include "kernels/vec.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/ops.h"
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

void from_f32(TensorType type, const float* src, void* dst, int n) { quant::quantize_row(type, src, dst, n); }

uint64_t read_sum(const void* p, size_t bytes, int /*streams*/, bool /*touch_pages*/) {
  const auto* b = static_cast<const uint8_t*>(p);
  uint64_t s = 0;
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t w;
    std::memcpy(&w, b + i, 8);
    s += w;
  }
  uint64_t tail = 0;
  for (size_t j = 0; i + j < bytes; ++j) tail |= static_cast<uint64_t>(b[i + j]) << (8 * j);
  return s + tail;
}

double exp_sum(float* out, const float* x, int64_t n, float shift, float scale) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float a = (x[i] - shift) * scale;
    sum += out[i] = a < kExpFloor ? 0.0f : std::exp(a);
  }
  return sum;
}

const VecKernels kRef{to_f32, dot, axpy, nullptr, ops::swiglu, from_f32, read_sum, exp_sum, ops::rmsnorm};

}  // namespace

const VecKernels* ref_vec_kernels() { return &kRef; }

void attend_reference(const VecKernels& vk, const AttendArgs& a) {
  const int hd = a.head_dim;
  for (int p = 0; p < a.n_pos; ++p) {
    vk.to_f32(a.k_type, a.k + static_cast<size_t>(p) * a.k_stride, a.row, hd);
    for (int h = 0; h < a.group; ++h) a.scores[h * a.n_pos + p] = vk.dot(a.q + h * hd, a.row, hd) * a.scale;
  }
  for (int h = 0; h < a.group; ++h) {
    ops::softmax(a.scores + h * a.n_pos, a.n_pos);
    for (int i = 0; i < hd; ++i) a.out[h * hd + i] = 0;
  }
  for (int p = 0; p < a.n_pos; ++p) {
    vk.to_f32(a.v_type, a.v + static_cast<size_t>(p) * a.v_stride, a.row, hd);
    for (int h = 0; h < a.group; ++h) vk.axpy(a.out + h * hd, a.scores[h * a.n_pos + p], a.row, hd);
  }
}

void softmax_heads(float* scores, int n_pos, int group) {
  for (int h = 0; h < group; ++h) {
    float mx = scores[h];
    for (int p = 1; p < n_pos; ++p) mx = std::max(mx, scores[static_cast<size_t>(p) * group + h]);
    float sum = 0;
    for (int p = 0; p < n_pos; ++p) {
      float& s = scores[static_cast<size_t>(p) * group + h];
      s = std::exp(s - mx);
      sum += s;
    }
    const float r = 1.0f / sum;
    for (int p = 0; p < n_pos; ++p) scores[static_cast<size_t>(p) * group + h] *= r;
  }
}

int attend_scores_stride(int group) {
  if (group > 16) return group;
  int s = 1;
  while (s < group) s *= 2;
  return s;
}

size_t attend_scores_floats(int group, int n_pos) {
  return static_cast<size_t>(attend_scores_stride(group)) * static_cast<size_t>(n_pos) + 8;
}

void attend(const VecKernels& vk, const AttendArgs& a) {
  if (vk.attend && vk.attend(a)) return;
  attend_reference(vk, a);
}

}  // namespace brisk::kernels
