// SPDX-License-Identifier: MIT
// Vector kernels of attention: cache rows to floats, dot products and
// scaled accumulation; and of the steps between the matmuls (SwiGLU,
// rmsnorm). Attention does not batch across sequences the way the
// matmuls do, so with many sequences or long contexts these matter; they have
// a scalar reference and per-ISA variants like the matmuls.
#pragma once
#include <cstdint>

#include "core/tensor_type.h"
#include "kernels/matmul.h"

namespace brisk::kernels {

struct VecKernels {
  // n floats from a cache row segment of type F32, F16, Q8_0 or Q4_0
  // (n a multiple of 32 for the block types).
  void (*to_f32)(TensorType type, const void* src, float* dst, int n);
  float (*dot)(const float* a, const float* b, int n);
  // y += a * x
  void (*axpy)(float* y, float a, const float* x, int n);
  // Fused attention of one KV head (see AttendArgs); returns false if this
  // ISA has no fused version for the shape or cache types, and the caller
  // uses attend_reference. nullptr: never fused.
  bool (*attend)(const struct AttendArgs& a);
  // gate = silu(gate) * up (SwiGLU), as ops::swiglu.
  void (*swiglu)(float* gate, const float* up, int64_t n);
  // n floats to a cache row segment of `type`, bit-exact with
  // quant::quantize_row (the KV cache's writes: F16 is converted with F16C
  // where the ISA has it, the block types by the reference).
  void (*from_f32)(TensorType type, const float* src, void* dst, int n);
  // The sum (mod 2^64) of the 64-bit little-endian words of p[0, bytes),
  // a last partial word zero-extended: a pure streaming read for measuring
  // memory bandwidth (brisk bench's decode ceiling) that no compiler can
  // drop. Any alignment. The SIMD versions read the bytes as `streams`
  // (1, 2 or 4) equal parts side by side and, with touch_pages, touch each
  // part's pages ahead as the single-stream kernels do (kernels/prefetch.h);
  // the reference ignores both.
  uint64_t (*read_sum)(const void* p, size_t bytes, int streams, bool touch_pages);
  // The sampler's softmax numerators: out[i] = e^a with a = (x[i] - shift) *
  // scale, for shift >= every x[i] and scale > 0, and 0 where a < kExpFloor
  // (-Inf logits included); returns their sum. The SIMD versions use the
  // attention softmax's polynomial, within a few float ulps of expf.
  double (*exp_sum)(float* out, const float* x, int64_t n, float shift, float scale);
  // out = x / rms(x) * w, bit-exact with ops::rmsnorm (out and x apart).
  void (*rmsnorm)(float* out, const float* x, const float* w, int64_t n, float eps);
};

// Below this exponent exp_sum gives 0: e^-87 is near float's smallest normal.
inline constexpr float kExpFloor = -87.0f;

// Attention of the `group` query heads that share one KV head, over cache
// positions [0, n_pos):
//   out[h] = sum_p softmax_p(scale * q[h] . K[p]) V[p]
// K[p] is head_dim values of k_type at k + p * k_stride (V likewise).
// scores: scratch of attend_scores_floats(group, n_pos) floats.
struct AttendArgs {
  const float* q;  // group heads, head_dim apart
  int group, head_dim, n_pos;
  float scale;
  const uint8_t* k;
  size_t k_stride;
  TensorType k_type;
  const uint8_t* v;
  size_t v_stride;
  TensorType v_type;
  float* scores;
  float* row;     // scratch of head_dim floats
  float* v_rows;  // scratch of n_pos * head_dim floats, or nullptr
  float* out;  // group heads, head_dim apart
};

// Floats AttendArgs::scores must hold: more than group * n_pos, as a fused
// kernel pads each position's scores to the next divisor of 16 (groups 3,
// 5-7, 9-15), so that its softmax walks whole vectors, and stores 8 lanes
// at a time (8 floats of slack after the last position).
size_t attend_scores_floats(int group, int n_pos);
// The per-position stride of those padded scores: the smallest of 1, 2, 4,
// 8, 16 that is at least `group`, or `group` itself above 16.
int attend_scores_stride(int group);

// For fused kernels: softmax in place over positions of each of `group`
// heads of position-major scores (scores[p * group + h]), normalised.
void softmax_heads(float* scores, int n_pos, int group);

// The definition: rows converted with vk.to_f32, vk.dot, a softmax per head,
// vk.axpy. Every fused version is tested against it.
void attend_reference(const VecKernels& vk, const AttendArgs& a);
// vk.attend when it handles the arguments, else attend_reference.
void attend(const VecKernels& vk, const AttendArgs& a);

const VecKernels& vec_kernels();               // active ISA
const VecKernels* vec_kernels_for(Isa isa);    // nullptr if the CPU cannot run it

// Per-ISA tables (defined in ref/, avx2/, avx512/).
const VecKernels* ref_vec_kernels();
const VecKernels* avx2_vec_kernels();
const VecKernels* avx512_vec_kernels();

}  // namespace brisk::kernels
