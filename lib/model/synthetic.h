// SPDX-License-Identifier: MIT
// Models with random weights in the shapes of real ones, for benchmarks and
// tests that need a model larger than anything shipped as test data. The
// vocabulary is a made-up SentencePiece-style one, so text goes in and out.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor_type.h"

namespace brisk {

struct SyntheticShape {
  std::string name;
  std::string arch = "llama";  // "llama" or "qwen2" (Q/K/V biases)
  int n_embd = 0, n_layer = 0, n_head = 0, n_head_kv = 0, n_ff = 0, n_vocab = 0, n_ctx = 0;
  float rope_base = 10000.0f;
  bool tied_embeddings = false;
};

// Built-in shapes: tiny, tinyllama-1.1b, qwen2.5-0.5b, qwen2.5-1.5b,
// llama-2-7b, llama-3-8b, mistral-7b.
const std::vector<SyntheticShape>& synthetic_shapes();
// Throws BRISK_ERR_INVALID_ARGUMENT listing the known names if not found.
const SyntheticShape& find_synthetic_shape(const std::string& name);

// Writes a GGUF with random weights. Matrices are stored as `type` (norms
// stay F32); rows whose length does not fit the type's block use F16.
// Deterministic for a given seed. n_threads: 0 = all cores.
void write_synthetic_model(const SyntheticShape& shape, TensorType type, uint64_t seed, const std::string& path,
                           int n_threads = 0);

}  // namespace brisk
