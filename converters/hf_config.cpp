// SPDX-License-Identifier: MIT
#include "converters/hf_config.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_depth.h"

namespace brisk::convert {

namespace {

using json = nlohmann::json;
constexpr int64_t kMaxSize = int64_t(1) << 24;  // the engine's bound on any dimension

struct Reader {
  const json& j;
  const std::string& name;

  [[noreturn]] void bad(const std::string& what) const {
    fail(BRISK_ERR_BAD_FORMAT, "'" + name + "': " + what);
  }
  // A positive integer (JSON integers only; 4096.0 is refused as well).
  std::optional<int64_t> opt_int(const char* key) const {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return std::nullopt;
    if (!it->is_number_integer()) bad(std::string("'") + key + "' is not an integer");
    const int64_t v = it->get<int64_t>();
    if (v <= 0 || v > kMaxSize) bad(std::string("'") + key + "' = " + std::to_string(v) + " is out of range");
    return v;
  }
  int64_t req_int(const char* key) const {
    auto v = opt_int(key);
    if (!v) bad(std::string("'") + key + "' is missing");
    return *v;
  }
  std::optional<double> opt_num(const char* key) const {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return std::nullopt;
    if (!it->is_number()) bad(std::string("'") + key + "' is not a number");
    const double v = it->get<double>();
    if (!(v > 0) || v > 1e12) bad(std::string("'") + key + "' = " + std::to_string(v) + " is out of range");
    return v;
  }
  bool opt_bool(const char* key, bool def) const {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return def;
    if (!it->is_boolean()) bad(std::string("'") + key + "' is not true or false");
    return it->get<bool>();
  }
  // A token id: an integer, or a list of them (the first is taken).
  std::optional<int64_t> opt_token(const char* key) const {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return std::nullopt;
    const json* v = &*it;
    if (v->is_array()) {
      if (v->empty()) return std::nullopt;
      v = &(*v)[0];
    }
    if (!v->is_number_integer() || v->get<int64_t>() < 0 || v->get<int64_t>() > kMaxSize)
      bad(std::string("'") + key + "' is not a token id");
    return v->get<int64_t>();
  }
};

}  // namespace

HfConfig parse_hf_config(const std::string& text, const std::string& name) {
  check_json_depth(text, "'" + name + "'");
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) fail(BRISK_ERR_BAD_FORMAT, "'" + name + "': not valid JSON");
  if (!j.is_object()) fail(BRISK_ERR_BAD_FORMAT, "'" + name + "': not a JSON object");
  Reader r{j, name};
  HfConfig c;
  auto archs = j.find("architectures");
  if (archs == j.end() || !archs->is_array() || archs->empty() || !(*archs)[0].is_string())
    r.bad("'architectures' is missing (expected e.g. [\"LlamaForCausalLM\"])");
  c.hf_arch = (*archs)[0].get<std::string>();
  if (c.hf_arch == "LlamaForCausalLM" || c.hf_arch == "MistralForCausalLM") {
    c.arch = "llama";  // llama.cpp converts Mistral to the llama architecture too
    c.permute_qk = true;
  } else if (c.hf_arch == "Qwen2ForCausalLM") {
    c.arch = "qwen2";
    c.qkv_bias = true;
  } else {
    fail(BRISK_ERR_UNSUPPORTED, "'" + name + "': architecture '" + c.hf_arch.substr(0, 100) +
                                    "' is not supported (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM)");
  }
  c.n_embd = r.req_int("hidden_size");
  c.n_ff = r.req_int("intermediate_size");
  c.n_layer = r.req_int("num_hidden_layers");
  c.n_head = r.req_int("num_attention_heads");
  c.n_head_kv = r.opt_int("num_key_value_heads").value_or(c.n_head);
  c.n_vocab = r.req_int("vocab_size");
  c.n_ctx = r.opt_int("max_position_embeddings").value_or(2048);
  c.head_dim = r.opt_int("head_dim").value_or(c.n_embd / c.n_head);
  if (!j.contains("head_dim") && c.n_embd % c.n_head != 0)
    r.bad("hidden_size " + std::to_string(c.n_embd) + " is not a multiple of num_attention_heads");
  if (c.n_head % c.n_head_kv != 0)
    r.bad("num_attention_heads is not a multiple of num_key_value_heads");
  if (c.head_dim % 2 != 0) r.bad("head_dim " + std::to_string(c.head_dim) + " is odd");
  c.rms_eps = r.opt_num("rms_norm_eps").value_or(1e-6);
  c.rope_theta = r.opt_num("rope_theta").value_or(10000.0);
  // The transformers defaults: untied for these architectures.
  c.tied_embeddings = r.opt_bool("tie_word_embeddings", false);
  if (c.arch == "llama" && (r.opt_bool("attention_bias", false) || r.opt_bool("mlp_bias", false)))
    fail(BRISK_ERR_UNSUPPORTED, "'" + name + "': llama models with attention_bias or mlp_bias are not supported");
  if (auto rs = j.find("rope_scaling"); rs != j.end() && !rs->is_null()) {
    if (!rs->is_object()) r.bad("'rope_scaling' is not an object");
    std::string type;
    for (const char* k : {"type", "rope_type"})
      if (auto t = rs->find(k); t != rs->end() && t->is_string()) type = t->get<std::string>();
    auto f = rs->find("factor");
    if (type == "linear" && f != rs->end() && f->is_number() && f->get<double>() > 0 && f->get<double>() < 1e6) {
      c.rope_linear_factor = f->get<double>();
    } else if (type != "default") {
      // Silently dropping it would give a model that runs and answers wrongly.
      fail(BRISK_ERR_UNSUPPORTED, "'" + name + "': rope_scaling type '" + type.substr(0, 40) +
                                      "' is not supported (linear only)");
    }
  }
  c.bos_id = r.opt_token("bos_token_id");
  c.eos_id = r.opt_token("eos_token_id");
  return c;
}

}  // namespace brisk::convert
