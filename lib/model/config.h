// SPDX-License-Identifier: MIT
// Hyper-parameters of a llama-family model, read from GGUF metadata.
#pragma once
#include <cstdint>
#include <string>

namespace brisk {

namespace gguf {
class File;
}

enum class Arch { llama, qwen2 };

struct ModelConfig {
  Arch arch = Arch::llama;
  std::string arch_name;   // general.architecture as written
  int n_vocab = 0;
  int n_embd = 0;          // model width
  int n_layer = 0;
  int n_head = 0;
  int n_head_kv = 0;       // < n_head: grouped-query attention
  int head_dim = 0;
  int n_ff = 0;            // feed-forward width
  int n_ctx_train = 0;
  float rms_eps = 1e-5f;
  float rope_freq_base = 10000.0f;
  float rope_freq_scale = 1.0f;  // positions are multiplied by this (linear scaling)
  int rope_dim = 0;              // dimensions of each head that rotate
  bool rope_neox = false;        // rotate halves (qwen2) instead of adjacent pairs
  bool has_qkv_bias = false;

  int q_dim() const { return n_head * head_dim; }
  int kv_dim() const { return n_head_kv * head_dim; }

  // Reads and checks `<arch>.*` keys; throws a clear error for unsupported
  // architectures, missing or inconsistent values.
  static ModelConfig from_gguf(const gguf::File& file);
};

}  // namespace brisk
