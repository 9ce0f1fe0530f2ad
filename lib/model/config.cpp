// SPDX-License-Identifier: MIT
#include "model/config.h"

#include <string>

#include "core/error.h"
#include "gguf/gguf.h"

namespace brisk {

namespace {

// Upper bounds far above any published llama-family model; they keep
// products such as n_head * head_dim and n_layer * kv_dim well inside int and
// stop a hostile header from sizing buffers before the tensors are checked.
constexpr uint64_t kMaxLayers = 4096;
constexpr uint64_t kMaxWidth = 1u << 18;  // embedding, heads x head size
constexpr uint64_t kMaxFf = 1u << 20;
constexpr uint64_t kMaxHeads = 8192;
constexpr uint64_t kMaxCtx = 1u << 24;
// Tensors every layer has: attn_norm, q, k, v, output, ffn_norm, gate, up, down.
constexpr uint64_t kTensorsPerLayer = 9;

int positive_int(const gguf::File& f, const std::string& key, uint64_t value, uint64_t max) {
  if (value == 0 || value > max)
    f.fail_format("metadata key '" + key + "' = " + std::to_string(value) + " is out of range (1 to " +
                  std::to_string(max) + ")");
  return static_cast<int>(value);
}

}  // namespace

ModelConfig ModelConfig::from_gguf(const gguf::File& f) {
  ModelConfig c;
  c.arch_name = f.get_string("general.architecture");
  if (c.arch_name == "llama" || c.arch_name == "mistral") {
    c.arch = Arch::llama;
  } else if (c.arch_name == "qwen2") {
    c.arch = Arch::qwen2;
    c.rope_neox = true;
    c.has_qkv_bias = true;
  } else {
    fail(BRISK_ERR_UNSUPPORTED, "'" + f.path() + "': architecture '" + c.arch_name +
                                    "' is not supported (brisk runs llama, mistral and qwen2)");
  }
  const std::string a = c.arch_name + ".";
  auto req = [&](const char* k, uint64_t max) { return positive_int(f, a + k, f.get_uint(a + k), max); };
  auto opt = [&](const char* k, int def, uint64_t max) {
    auto v = f.opt_uint(a + k);
    return v ? positive_int(f, a + k, *v, max) : def;
  };
  c.n_embd = req("embedding_length", kMaxWidth);
  c.n_layer = req("block_count", kMaxLayers);
  // Checked against the tensors actually present before anything is sized
  // by the layer count.
  if (static_cast<uint64_t>(c.n_layer) * kTensorsPerLayer > f.tensors().size())
    f.fail_format("block_count " + std::to_string(c.n_layer) + " needs at least " +
                  std::to_string(static_cast<uint64_t>(c.n_layer) * kTensorsPerLayer) + " tensors, the file has " +
                  std::to_string(f.tensors().size()));
  c.n_ff = req("feed_forward_length", kMaxFf);
  c.n_head = req("attention.head_count", kMaxHeads);
  c.n_head_kv = opt("attention.head_count_kv", c.n_head, kMaxHeads);
  c.n_ctx_train = opt("context_length", 2048, kMaxCtx);
  if (c.n_embd % c.n_head != 0)
    f.fail_format("embedding_length " + std::to_string(c.n_embd) + " is not a multiple of head_count " +
                  std::to_string(c.n_head));
  c.head_dim = opt("attention.key_length", c.n_embd / c.n_head, kMaxWidth);
  if (opt("attention.value_length", c.head_dim, kMaxWidth) != c.head_dim)
    fail(BRISK_ERR_UNSUPPORTED, "'" + f.path() + "': different key and value head sizes are not supported");
  if (c.n_head % c.n_head_kv != 0)
    f.fail_format("head_count " + std::to_string(c.n_head) + " is not a multiple of head_count_kv " +
                  std::to_string(c.n_head_kv));
  if (c.head_dim > 512)
    fail(BRISK_ERR_UNSUPPORTED, "'" + f.path() + "': head size " + std::to_string(c.head_dim) + " is above 512");
  if (static_cast<uint64_t>(c.n_head) * static_cast<uint64_t>(c.head_dim) > kMaxWidth)
    f.fail_format("head_count " + std::to_string(c.n_head) + " x head size " + std::to_string(c.head_dim) +
                  " is out of range");
  c.rope_dim = opt("rope.dimension_count", c.head_dim, kMaxWidth);
  if (c.rope_dim > c.head_dim || c.rope_dim % 2 != 0)
    f.fail_format("rope.dimension_count " + std::to_string(c.rope_dim) + " does not fit head size " +
                  std::to_string(c.head_dim));
  if (auto eps = f.opt_float(a + "attention.layer_norm_rms_epsilon")) c.rms_eps = static_cast<float>(*eps);
  if (auto base = f.opt_float(a + "rope.freq_base")) c.rope_freq_base = static_cast<float>(*base);
  if (!(c.rms_eps > 0) || !(c.rope_freq_base > 0)) f.fail_format("rms epsilon and rope.freq_base must be positive");

  // RoPE scaling: linear position interpolation is applied; other kinds would
  // silently give wrong answers, so they are refused.
  std::string scaling = f.opt_string(a + "rope.scaling.type").value_or("none");
  auto factor = f.opt_float(a + "rope.scaling.factor");
  if (!factor) {
    // Older files store the linear scale directly.
    if (auto lin = f.opt_float(a + "rope.scale_linear")) {
      scaling = "linear";
      factor = *lin;
    }
  }
  if (scaling == "linear" && factor && *factor > 0) {
    c.rope_freq_scale = static_cast<float>(1.0 / *factor);
  } else if (scaling != "none" && scaling != "linear" && factor && *factor != 1.0) {
    fail(BRISK_ERR_UNSUPPORTED, "'" + f.path() + "': rope scaling '" + scaling + "' is not supported (linear only)");
  }
  return c;
}

}  // namespace brisk
