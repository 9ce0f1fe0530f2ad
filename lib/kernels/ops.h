// SPDX-License-Identifier: MIT
// Small vector ops of the forward pass (everything but the matmuls). These are
// a few percent of a step's time, so they are written once, plainly, for the
// compiler to vectorise. rmsnorm and SwiGLU run on every layer and also have
// per-ISA versions (kernels/vec.h); these are their references.
#pragma once
#include <cstddef>
#include <cstdint>

namespace brisk::ops {

// out = x / rms(x) * w, with rms = sqrt(mean(x^2) + eps).
void rmsnorm(float* out, const float* x, const float* w, int64_t n, float eps);
// x += y
void add(float* x, const float* y, int64_t n);
// gate = silu(gate) * up  (SwiGLU)
void swiglu(float* gate, const float* up, int64_t n);
// In-place softmax over n values.
void softmax(float* x, int64_t n);
float dot(const float* a, const float* b, int64_t n);

// Rotary position embedding of one vector of n_heads * head_dim values:
// cos_sin holds (cos, sin) for each of the rope_dim/2 frequency pairs at this
// position. neox=false rotates adjacent pairs (x[2i], x[2i+1]) (GGUF llama);
// neox=true rotates (x[i], x[i + rope_dim/2]) (qwen2 and other NeoX layouts).
// Dimensions at and beyond rope_dim are left as they are.
void rope(float* x, int n_heads, int head_dim, int rope_dim, const float* cos_sin, bool neox);

}  // namespace brisk::ops
