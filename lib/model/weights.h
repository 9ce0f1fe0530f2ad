// SPDX-License-Identifier: MIT
// The model's tensors bound to the mapped GGUF file, checked against the
// configuration. Matrices stay in the mapping (zero-copy); small vectors
// (norms, biases) are converted to owned float arrays at load.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor_type.h"
#include "model/config.h"

namespace brisk {

namespace gguf {
class File;
}

// A weight matrix of `rows` rows of `cols` values each (GGUF ne[1] x ne[0]).
// Row-major as in the file, or packed in 16-row groups (kernels/packed.h):
// then `data` is the first group, groups are `group_bytes` apart, and rows
// cannot be addressed one by one.
struct Matrix {
  TensorType type = TensorType::F32;
  int64_t cols = 0;
  int64_t rows = 0;
  size_t row_bytes = 0;
  const uint8_t* data = nullptr;
  std::string name;
  bool packed = false;
  size_t group_bytes = 0;
  const uint8_t* row(int64_t r) const { return data + static_cast<size_t>(r) * row_bytes; }
};

struct LayerWeights {
  std::vector<float> attn_norm;
  Matrix wq, wk, wv, wo;
  std::vector<float> bq, bk, bv;  // qwen2 only
  std::vector<float> ffn_norm;
  Matrix w_gate, w_up, w_down;
};

struct Weights {
  Matrix token_embd;
  std::vector<float> output_norm;
  Matrix output;  // token_embd when the embeddings are tied
  std::vector<float> rope_freq_factors;  // optional per-frequency divisors (Llama 3.1)
  std::vector<LayerWeights> layers;

  static Weights bind(const gguf::File& file, const ModelConfig& config);
  // Copies every matrix that the active instruction set reads faster packed
  // (kernels/packed.h) into one packed buffer and releases the file pages
  // those matrices came from, so resident memory holds each weight once.
  // The token embeddings (read a row at a time)
  // and the output matrix when it shares them stay in the file.
  void pack_for_kernels();
  std::shared_ptr<void> packed_storage;  // owns the packed copies
  uint64_t packed_bytes = 0;             // its size (already allocated: not planned again)
  // Bytes of all matrices (what a forward pass streams through).
  uint64_t matrix_bytes() const;
};

}  // namespace brisk
