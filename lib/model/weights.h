// SPDX-License-Identifier: MIT
// The model's tensors bound to the mapped GGUF file, checked against the
// configuration. Matrices stay in the mapping (zero-copy); small vectors
// (norms, biases) are converted to owned float arrays at load.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor_type.h"
#include "kernels/variants.h"
#include "model/config.h"

namespace brisk {

namespace gguf {
class File;
}
namespace kernels {
struct MatmulKernel;
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
  const uint8_t* file_data = nullptr;  // the rows in the file, while packed
  // The kernel the plan (model/kernel_plan.h) chose for each column class of
  // kernels/variants.h; nullptr: the active ISA's default for the layout.
  std::array<const kernels::MatmulKernel*, kernels::kColClasses> kernels{};
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
  bool tied_output = false;
  // The file is a plain mapping (not read into memory, not locked): its
  // released pages read back from the page cache. Only then is a tied output
  // packed, since the embedding lookups keep reading its rows in the file.
  bool file_reads_back = false;
  std::vector<float> rope_freq_factors;  // optional per-frequency divisors (Llama 3.1)
  std::vector<LayerWeights> layers;

  static Weights bind(const gguf::File& file, const ModelConfig& config);
  // The matrices a forward pass multiplies with: every layer's, and the
  // output, unless it is tied to the token embeddings and the file's pages
  // would not read back once released (file_reads_back).
  std::vector<Matrix*> matmul_matrices();
  // Copies every matrix of these types that has a packed layout
  // (kernels/packed.h) into one packed buffer per type. With
  // release_file_pages, the file pages they came from are released at once,
  // so resident memory holds each weight once; otherwise release them with
  // release_file_pages() once the plan is settled.
  void pack(const std::vector<TensorType>& types, bool release_file_pages);
  // Puts the packed matrices of type t back on their file rows and frees
  // their packed copy.
  void unpack(TensorType t);
  void release_file_pages();
  // Owns the packed copies, one buffer per type.
  std::vector<std::pair<TensorType, std::shared_ptr<void>>> packed_storage;
  uint64_t packed_bytes = 0;  // their size (already allocated: not planned again)
  // Bytes of weights one decode step reads: every matrix it multiplies with
  // (the output, tied or not), one row of the token embeddings and the norm
  // and bias vectors. Untied embeddings are read a row per token, not whole.
  uint64_t decode_bytes() const;
};

}  // namespace brisk
