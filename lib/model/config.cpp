#include "model/config.h"

#include <string>

#include "core/error.h"
#include "gguf/gguf.h"

namespace brisk {

namespace {

int positive_int(const gguf::File& f, const std::string& key, uint64_t value) {
  if (value == 0 || value > (1u << 24))
    f.fail_format("metadata key '" + key + "' = " + std::to_string(value) + " is out of range");
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
  auto req = [&](const char* k) { return positive_int(f, a + k, f.get_uint(a + k)); };
  auto opt = [&](const char* k, int def) {
    auto v = f.opt_uint(a + k);
    return v ? positive_int(f, a + k, *v) : def;
  };
  c.n_embd = req("embedding_length");
  c.n_layer = req("block_count");
  c.n_ff = req("feed_forward_length");
  c.n_head = req("attention.head_count");
  c.n_head_kv = opt("attention.head_count_kv", c.n_head);
  c.n_ctx_train = opt("context_length", 2048);
  if (c.n_embd % c.n_head != 0)
    f.fail_format("embedding_length " + std::to_string(c.n_embd) + " is not a multiple of head_count " +
                  std::to_string(c.n_head));
  c.head_dim = opt("attention.key_length", c.n_embd / c.n_head);
  if (opt("attention.value_length", c.head_dim) != c.head_dim)
    fail(BRISK_ERR_UNSUPPORTED, "'" + f.path() + "': different key and value head sizes are not supported");
  if (c.n_head % c.n_head_kv != 0)
    f.fail_format("head_count " + std::to_string(c.n_head) + " is not a multiple of head_count_kv " +
                  std::to_string(c.n_head_kv));
  if (c.head_dim > 512)
    fail(BRISK_ERR_UNSUPPORTED, "'" + f.path() + "': head size " + std::to_string(c.head_dim) + " is above 512");
  c.rope_dim = opt("rope.dimension_count", c.head_dim);
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
