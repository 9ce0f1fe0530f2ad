// SPDX-License-Identifier: MIT
// Hugging Face safetensors directory -> GGUF, following llama.cpp's
// convert_hf_to_gguf.py for LlamaForCausalLM, MistralForCausalLM and
// Qwen2ForCausalLM: same tensor names, metadata keys and Q/K permutation.
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "bundle/hash.h"
#include "bundle/manifest.h"
#include "converters/convert.h"
#include "converters/hf_config.h"
#include "converters/hf_files.h"
#include "converters/model_writer.h"
#include "converters/safetensors.h"
#include "converters/vocab_meta.h"
#include "core/error.h"
#include "core/json_depth.h"

namespace brisk::convert {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// The safetensors files of a model, one or sharded, with a name index.
struct Weights {
  std::vector<std::unique_ptr<SafetensorsFile>> files;
  std::map<std::string, const StTensor*> by_name;
  MapOptions map;

  void add_file(const fs::path& p) {
    files.push_back(std::make_unique<SafetensorsFile>(p.string(), map));
    for (const StTensor& t : files.back()->tensors())
      if (!by_name.emplace(t.name, &t).second)
        fail(BRISK_ERR_BAD_FORMAT, "tensor '" + t.name + "' appears in more than one shard ('" + p.string() + "')");
  }
};

// A shard name from the index must stay inside the model directory.
bool plain_file_name(const std::string& s) {
  return !s.empty() && s.size() < 256 && s[0] != '.' && s.find('/') == std::string::npos &&
         s.find('\\') == std::string::npos && s.find('\0') == std::string::npos;
}

Weights open_weights(const fs::path& dir, const MapOptions& map) {
  Weights w;
  w.map = map;
  const fs::path index = dir / "model.safetensors.index.json";
  std::string where = "'";
  where += index.string();
  where += "': ";  // piecewise: GCC 12 warns falsely (-Wrestrict) on "x" + string&&
  if (auto text = read_small_file(index)) {
    check_json_depth(*text, where.substr(0, where.size() - 2));
    json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
      fail(BRISK_ERR_BAD_FORMAT, where + "not a JSON object with a \"weight_map\" object");
    std::set<std::string> shards;
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
      if (!it->is_string() || !plain_file_name(it->get<std::string>()))
        fail(BRISK_ERR_BAD_FORMAT, where + "tensor '" + it.key() + "' maps to an invalid file name");
      shards.insert(it->get<std::string>());
    }
    for (const std::string& s : shards) w.add_file(dir / s);
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it)
      if (!w.by_name.count(it.key()))
        fail(BRISK_ERR_BAD_FORMAT, where + "tensor '" + it.key() + "' is not in '" + it->get<std::string>() + "'");
  } else if (fs::exists(dir / "model.safetensors")) {
    w.add_file(dir / "model.safetensors");
  } else {
    fail(BRISK_ERR_NOT_FOUND, "no model.safetensors or model.safetensors.index.json in '" + dir.string() +
                                  "' (PyTorch .bin checkpoints are not supported)");
  }
  return w;
}

struct Mapper {
  const HfConfig& c;
  const Weights& w;
  TensorType want;
  std::vector<PlannedTensor> plan;
  std::vector<const StTensor*> sources;  // parallel to plan, for the source hash
  std::set<std::string> used;

  // Adds HF tensor `hf` as GGUF `name`, checking its shape ([rows, cols] or [cols]).
  void map(const std::string& hf, const std::string& name, int64_t rows, int64_t cols, int64_t permute_heads = 0) {
    auto it = w.by_name.find(hf);
    if (it == w.by_name.end()) fail(BRISK_ERR_BAD_FORMAT, "tensor '" + hf + "' is missing from the checkpoint");
    const StTensor& t = *it->second;
    const std::vector<int64_t> want_shape = rows > 0 ? std::vector<int64_t>{rows, cols} : std::vector<int64_t>{cols};
    if (t.shape != want_shape)
      fail(BRISK_ERR_BAD_FORMAT, "tensor '" + hf + "' has shape " + t.shape_string() + ", config.json implies " +
                                     StTensor{"", "", 0, want_shape}.shape_string());
    PlannedTensor p;
    p.name = name;
    if (!t.float_type(&p.src_type))
      fail(BRISK_ERR_UNSUPPORTED, "tensor '" + hf + "' is " + t.dtype + "; only F32, F16 and BF16 convert");
    p.ne = rows > 0 ? std::vector<int64_t>{cols, rows} : std::vector<int64_t>{cols};
    p.src = t.data;
    p.permute_heads = permute_heads;
    p.type = storage_type(want, cols, rows > 0);
    plan.push_back(std::move(p));
    sources.push_back(&t);
    used.insert(hf);
  }
};

void add_hparams(gguf::Writer& w, const HfConfig& c, int64_t n_vocab) {
  const std::string a = c.arch + ".";
  w.add_u32(a + "vocab_size", static_cast<uint32_t>(n_vocab));
  w.add_u32(a + "context_length", static_cast<uint32_t>(c.n_ctx));
  w.add_u32(a + "embedding_length", static_cast<uint32_t>(c.n_embd));
  w.add_u32(a + "block_count", static_cast<uint32_t>(c.n_layer));
  w.add_u32(a + "feed_forward_length", static_cast<uint32_t>(c.n_ff));
  w.add_u32(a + "attention.head_count", static_cast<uint32_t>(c.n_head));
  w.add_u32(a + "attention.head_count_kv", static_cast<uint32_t>(c.n_head_kv));
  w.add_f32(a + "rope.freq_base", static_cast<float>(c.rope_theta));
  w.add_f32(a + "attention.layer_norm_rms_epsilon", static_cast<float>(c.rms_eps));
  w.add_u32(a + "rope.dimension_count", static_cast<uint32_t>(c.head_dim));
  if (c.head_dim * c.n_head != c.n_embd) {
    w.add_u32(a + "attention.key_length", static_cast<uint32_t>(c.head_dim));
    w.add_u32(a + "attention.value_length", static_cast<uint32_t>(c.head_dim));
  }
  if (c.rope_linear_factor) {
    w.add_string(a + "rope.scaling.type", "linear");
    w.add_f32(a + "rope.scaling.factor", static_cast<float>(*c.rope_linear_factor));
  }
}

}  // namespace

void convert_hf(const std::string& dir_s, const std::string& out, const ConvertOptions& o, const bundle::Job& job) {
  const fs::path dir(dir_s);
  if (!fs::is_directory(dir)) fail(BRISK_ERR_NOT_FOUND, "'" + dir_s + "' is not a directory");
  const fs::path config_path = dir / "config.json";
  auto config_text = read_small_file(config_path);
  if (!config_text) fail(BRISK_ERR_NOT_FOUND, "no config.json in '" + dir_s + "'");
  const HfConfig c = parse_hf_config(*config_text, config_path.string());
  Weights weights = open_weights(dir, o.input);

  auto emb = weights.by_name.find("model.embed_tokens.weight");
  if (emb == weights.by_name.end() || emb->second->shape.size() != 2)
    fail(BRISK_ERR_BAD_FORMAT, "'" + dir_s + "': no 2-D model.embed_tokens.weight");
  const int64_t n_vocab = emb->second->shape[0];
  if (n_vocab != c.n_vocab)
    job.warning("config.json says vocab_size " + std::to_string(c.n_vocab) + ", the embedding has " +
                std::to_string(n_vocab) + " rows; using " + std::to_string(n_vocab));
  TensorType src_type = TensorType::F32;
  if (!emb->second->float_type(&src_type))
    fail(BRISK_ERR_UNSUPPORTED, "model.embed_tokens.weight is " + emb->second->dtype + "; only F32, F16 and BF16 convert");
  const TensorType want = o.auto_type ? src_type : o.type;

  Mapper m{c, weights, want, {}, {}, {}};
  const int64_t q = c.n_head * c.head_dim, kv = c.n_head_kv * c.head_dim;
  m.map("model.embed_tokens.weight", "token_embd.weight", n_vocab, c.n_embd);
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const std::string h = "model.layers." + std::to_string(l) + ".", g = "blk." + std::to_string(l) + ".";
    m.map(h + "input_layernorm.weight", g + "attn_norm.weight", 0, c.n_embd);
    m.map(h + "self_attn.q_proj.weight", g + "attn_q.weight", q, c.n_embd, c.permute_qk ? c.n_head : 0);
    m.map(h + "self_attn.k_proj.weight", g + "attn_k.weight", kv, c.n_embd, c.permute_qk ? c.n_head_kv : 0);
    m.map(h + "self_attn.v_proj.weight", g + "attn_v.weight", kv, c.n_embd);
    if (c.qkv_bias) {
      m.map(h + "self_attn.q_proj.bias", g + "attn_q.bias", 0, q);
      m.map(h + "self_attn.k_proj.bias", g + "attn_k.bias", 0, kv);
      m.map(h + "self_attn.v_proj.bias", g + "attn_v.bias", 0, kv);
    }
    m.map(h + "self_attn.o_proj.weight", g + "attn_output.weight", c.n_embd, q);
    m.map(h + "post_attention_layernorm.weight", g + "ffn_norm.weight", 0, c.n_embd);
    m.map(h + "mlp.gate_proj.weight", g + "ffn_gate.weight", c.n_ff, c.n_embd);
    m.map(h + "mlp.up_proj.weight", g + "ffn_up.weight", c.n_ff, c.n_embd);
    m.map(h + "mlp.down_proj.weight", g + "ffn_down.weight", c.n_embd, c.n_ff);
  }
  m.map("model.norm.weight", "output_norm.weight", 0, c.n_embd);
  // Tied embeddings: no output.weight (the loader reuses token_embd), as
  // llama.cpp's converter writes them; a redundant lm_head copy is dropped.
  if (!c.tied_embeddings) m.map("lm_head.weight", "output.weight", n_vocab, c.n_embd);
  else m.used.insert("lm_head.weight");
  for (const auto& [name, t] : weights.by_name)
    if (!m.used.count(name) && name.find("rotary_emb.inv_freq") == std::string::npos)
      fail(BRISK_ERR_UNSUPPORTED, "tensor '" + name + "' is not part of a " + c.hf_arch + " with " +
                                      std::to_string(c.n_layer) + " layers; not converted");

  VocabData vocab = load_hf_directory_vocab(dir, n_vocab, c.bos_id, c.eos_id);
  gguf::Writer w;
  w.add_string("general.architecture", c.arch);
  std::string name = o.name;
  if (name.empty()) name = fs::absolute(dir).lexically_normal().filename().string();
  if (name.empty()) name = fs::absolute(dir).lexically_normal().parent_path().filename().string();
  w.add_string("general.name", name);
  add_hparams(w, c, n_vocab);
  add_vocab(w, vocab);

  // The source hash covers what the model is made of, independent of how
  // the checkpoint is split into shards: tensors in output order (name,
  // dtype, shape, bytes), then the configuration and tokenizer files.
  auto source_hash = [&] {
    bundle::Hasher h;
    for (const StTensor* t : m.sources) {
      const std::string head = t->name + "\n" + t->dtype + "\n" + t->shape_string() + "\n";
      h.update(head.data(), head.size());
      hash_and_release(h, t->data, static_cast<size_t>(t->end - t->begin), o.input);
    }
    for (const char* f : {"config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json",
                          "chat_template.jinja", "chat_template.json"})
      if (auto text = read_small_file(dir / f, uint64_t(1) << 30)) {
        const std::string head = std::string(f) + "\n" + std::to_string(text->size()) + "\n";
        h.update(head.data(), head.size());
        h.update(text->data(), text->size());
      }
    return h.digest();
  };
  write_model(w, m.plan, want, out, bundle::tool_string("convert"), source_hash, job, o.input);
}

}  // namespace brisk::convert
