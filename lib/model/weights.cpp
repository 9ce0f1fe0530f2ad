// SPDX-License-Identifier: MIT
#include "model/weights.h"

#include "core/error.h"
#include "gguf/gguf.h"
#include "quant/quant.h"

namespace brisk {

namespace {

class Binder {
 public:
  Binder(const gguf::File& f) : f_(f) {}

  const gguf::TensorInfo& find(const std::string& name) const {
    const gguf::TensorInfo* t = f_.find_tensor(name);
    if (!t) f_.fail_format("required tensor '" + name + "' is missing");
    return *t;
  }

  void check_shape(const gguf::TensorInfo& t, int64_t ne0, int64_t ne1) const {
    bool ok = t.ne[0] == ne0 && t.ne[1] == ne1 && t.ne[2] == 1 && t.ne[3] == 1;
    if (!ok)
      f_.fail_format("tensor '" + t.name + "' has shape " + t.shape_string() + ", the architecture needs [" +
                     std::to_string(ne0) + (ne1 > 1 ? ", " + std::to_string(ne1) : "") + "]");
  }

  Matrix matrix(const std::string& name, int64_t cols, int64_t rows) const {
    const gguf::TensorInfo& t = find(name);
    check_shape(t, cols, rows);
    if (!type_traits(t.type).supported)
      fail(BRISK_ERR_UNSUPPORTED, "'" + f_.path() + "': tensor '" + name + "' has type " + type_name(t.type) +
                                      ", which brisk cannot compute with yet");
    Matrix m;
    m.type = t.type;
    m.cols = cols;
    m.rows = rows;
    m.row_bytes = row_bytes(t.type, cols);
    m.data = t.data;
    m.name = name;
    return m;
  }

  std::vector<float> vector(const std::string& name, int64_t n, bool required = true) const {
    const gguf::TensorInfo* t = f_.find_tensor(name);
    if (!t) {
      if (required) f_.fail_format("required tensor '" + name + "' is missing");
      return {};
    }
    check_shape(*t, n, 1);
    if (t->type != TensorType::F32 && t->type != TensorType::F16 && t->type != TensorType::BF16)
      fail(BRISK_ERR_UNSUPPORTED, "'" + f_.path() + "': vector '" + name + "' has type " + type_name(t->type) +
                                      " (f32, f16 or bf16 expected)");
    std::vector<float> v(static_cast<size_t>(n));
    quant::dequantize_row(t->type, t->data, v.data(), n);
    return v;
  }

 private:
  const gguf::File& f_;
};

}  // namespace

Weights Weights::bind(const gguf::File& f, const ModelConfig& c) {
  Binder b(f);
  Weights w;
  const gguf::TensorInfo& emb = b.find("token_embd.weight");
  w.token_embd = b.matrix("token_embd.weight", c.n_embd, emb.ne[1]);
  if (c.n_vocab != 0 && emb.ne[1] != c.n_vocab)
    f.fail_format("token_embd.weight has " + std::to_string(emb.ne[1]) + " rows but the vocabulary has " +
                  std::to_string(c.n_vocab) + " tokens");
  const int64_t n_vocab = emb.ne[1];
  w.output_norm = b.vector("output_norm.weight", c.n_embd);
  w.tied_output = !f.find_tensor("output.weight");
  w.output = w.tied_output ? w.token_embd : b.matrix("output.weight", c.n_embd, n_vocab);
  w.file_reads_back = !f.map_options().read_into_memory && !f.map_options().lock;
  if (f.find_tensor("rope_freqs.weight")) w.rope_freq_factors = b.vector("rope_freqs.weight", c.rope_dim / 2);

  w.layers.resize(static_cast<size_t>(c.n_layer));
  for (int l = 0; l < c.n_layer; ++l) {
    LayerWeights& L = w.layers[static_cast<size_t>(l)];
    const std::string p = "blk." + std::to_string(l) + ".";
    L.attn_norm = b.vector(p + "attn_norm.weight", c.n_embd);
    L.wq = b.matrix(p + "attn_q.weight", c.n_embd, c.q_dim());
    L.wk = b.matrix(p + "attn_k.weight", c.n_embd, c.kv_dim());
    L.wv = b.matrix(p + "attn_v.weight", c.n_embd, c.kv_dim());
    L.wo = b.matrix(p + "attn_output.weight", c.q_dim(), c.n_embd);
    if (c.has_qkv_bias) {
      L.bq = b.vector(p + "attn_q.bias", c.q_dim());
      L.bk = b.vector(p + "attn_k.bias", c.kv_dim());
      L.bv = b.vector(p + "attn_v.bias", c.kv_dim());
    }
    L.ffn_norm = b.vector(p + "ffn_norm.weight", c.n_embd);
    L.w_gate = b.matrix(p + "ffn_gate.weight", c.n_embd, c.n_ff);
    L.w_up = b.matrix(p + "ffn_up.weight", c.n_embd, c.n_ff);
    L.w_down = b.matrix(p + "ffn_down.weight", c.n_ff, c.n_embd);
  }
  return w;
}

uint64_t Weights::decode_bytes() const {
  auto bytes = [](const Matrix& m) { return static_cast<uint64_t>(m.row_bytes) * static_cast<uint64_t>(m.rows); };
  auto floats = [](const std::vector<float>& v) { return static_cast<uint64_t>(v.size() * sizeof(float)); };
  uint64_t total = bytes(output) + static_cast<uint64_t>(token_embd.row_bytes) + floats(output_norm);
  for (const LayerWeights& L : layers)
    total += bytes(L.wq) + bytes(L.wk) + bytes(L.wv) + bytes(L.wo) + bytes(L.w_gate) + bytes(L.w_up) +
             bytes(L.w_down) + floats(L.attn_norm) + floats(L.ffn_norm) + floats(L.bq) + floats(L.bk) + floats(L.bv);
  return total;
}

}  // namespace brisk
