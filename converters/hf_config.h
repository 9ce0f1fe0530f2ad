// SPDX-License-Identifier: MIT
// config.json of a Hugging Face causal LM, reduced to what a GGUF needs.
// Supported: LlamaForCausalLM and MistralForCausalLM (GGUF arch "llama",
// Q/K rows permuted for GGUF's rope layout) and Qwen2ForCausalLM ("qwen2",
// NeoX rope so no permutation, Q/K/V biases).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace brisk::convert {

struct HfConfig {
  std::string hf_arch;  // "LlamaForCausalLM", ...
  std::string arch;     // GGUF general.architecture: "llama" or "qwen2"
  int64_t n_embd = 0, n_ff = 0, n_layer = 0, n_head = 0, n_head_kv = 0, head_dim = 0;
  int64_t n_vocab = 0;  // vocab_size (the embedding matrix decides in the end)
  int64_t n_ctx = 0;    // max_position_embeddings
  double rms_eps = 1e-6;
  double rope_theta = 10000.0;
  std::optional<double> rope_linear_factor;  // rope_scaling {"type": "linear"}
  bool tied_embeddings = false;
  bool permute_qk = false;  // llama/mistral: HF rotate-half rows -> GGUF interleaved pairs
  bool qkv_bias = false;    // qwen2
  std::optional<int64_t> bos_id, eos_id;  // bos_token_id / eos_token_id (first if a list)
};

// Parses config.json text. BRISK_ERR_BAD_FORMAT for invalid JSON or values
// out of range, BRISK_ERR_UNSUPPORTED for other architectures or features
// (biases on llama, rope scaling other than linear). `name` is for messages.
HfConfig parse_hf_config(const std::string& json_text, const std::string& name);

}  // namespace brisk::convert
