// SPDX-License-Identifier: MIT
// llama2.c checkpoints (karpathy/llama2.c run.c, "legacy" version 0):
//   int32 dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len
//   (vocab_size < 0: the classifier is not shared with the embeddings), then
//   float32 weights: token_embedding [vocab][dim], rms_att [L][dim],
//   wq [L][dim][dim], wk [L][kv_dim][dim], wv [L][kv_dim][dim],
//   wo [L][dim][dim], rms_ffn [L][dim], w1 [L][hidden][dim],
//   w2 [L][dim][hidden], w3 [L][hidden][dim], rms_final [dim],
//   freq_cis_real/imag [seq_len][head_size/2] (unused), wcls [vocab][dim] if unshared.
// The tokenizer .bin: uint32 max_token_length, then per token float32 score,
// int32 length, bytes.
//
// llama2.c's rope rotates adjacent pairs, as GGUF's llama layout does, so
// every matrix is copied as it is (llama.cpp's converter does the same).
#include <cstdio>
#include <cstring>
#include <initializer_list>

#include "bundle/hash.h"
#include "bundle/manifest.h"
#include "converters/convert.h"
#include "converters/model_writer.h"
#include "converters/vocab_meta.h"
#include "core/error.h"
#include "core/mapped_file.h"

namespace brisk::convert {

namespace {

constexpr int64_t kMaxDim = int64_t(1) << 24;

struct Header {
  int64_t dim, hidden, n_layer, n_head, n_kv, vocab, seq_len;
  bool shared;
};

Header read_header(const MappedFile& m) {
  auto bad = [&](const std::string& what) { fail(BRISK_ERR_BAD_FORMAT, "'" + m.path() + "': " + what); };
  if (m.size() < 28) bad("too short for a llama2.c checkpoint header (28 bytes)");
  int32_t h[7];
  std::memcpy(h, m.data(), sizeof h);
  if (std::memcmp(m.data(), "ak42", 4) == 0)
    fail(BRISK_ERR_UNSUPPORTED, "'" + m.path() + "': llama2.c version 1/2 export; only the legacy version-0 "
                                                 "format (export.py --version 0) is supported");
  Header c{h[0], h[1], h[2], h[3], h[4], h[5] < 0 ? -int64_t(h[5]) : h[5], h[6], h[5] > 0};
  for (int64_t v : {c.dim, c.hidden, c.n_layer, c.n_head, c.n_kv, c.vocab, c.seq_len})
    if (v <= 0 || v > kMaxDim) bad("header value " + std::to_string(v) + " is out of range (not a llama2.c checkpoint?)");
  if (c.dim % c.n_head != 0 || c.n_head % c.n_kv != 0 || (c.dim / c.n_head) % 2 != 0)
    bad("dim " + std::to_string(c.dim) + ", " + std::to_string(c.n_head) + " heads and " + std::to_string(c.n_kv) +
        " kv heads do not fit together");
  return c;
}

// The vocabulary as llama.cpp's convert-llama2c-to-ggml builds it: ids 0-2
// are <unk>, <s>, </s> whatever the file says, "<0xNN>" pieces are byte
// tokens, and spaces are written as U+2581 as SentencePiece does.
VocabData read_tokenizer(const MappedFile& m, int64_t n_vocab) {
  auto bad = [&](const std::string& what) { fail(BRISK_ERR_BAD_FORMAT, "'" + m.path() + "': " + what); };
  VocabData v;
  v.model = "llama";
  size_t pos = 4;
  if (m.size() < 4) bad("too short for a llama2.c tokenizer");
  for (int64_t i = 0; i < n_vocab; ++i) {
    if (m.size() - pos < 8) bad("truncated at token " + std::to_string(i) + " of " + std::to_string(n_vocab));
    float score;
    int32_t len;
    std::memcpy(&score, m.data() + pos, 4);
    std::memcpy(&len, m.data() + pos + 4, 4);
    pos += 8;
    if (len < 0 || static_cast<uint64_t>(len) > m.size() - pos)
      bad("token " + std::to_string(i) + " has length " + std::to_string(len) + ", past the end of the file");
    std::string text(reinterpret_cast<const char*>(m.data() + pos), static_cast<size_t>(len));
    pos += static_cast<size_t>(len);
    int32_t type = static_cast<int32_t>(TokenType::NORMAL);
    unsigned hex = 0;
    char tail = 0;
    if (i == 0) {
      text = "<unk>";
      type = static_cast<int32_t>(TokenType::UNKNOWN);
    } else if (i == 1 || i == 2) {
      text = i == 1 ? "<s>" : "</s>";
      type = static_cast<int32_t>(TokenType::CONTROL);
    } else if (text.size() == 6 && std::sscanf(text.c_str(), "<0x%2X%c", &hex, &tail) == 2 && tail == '>') {
      type = static_cast<int32_t>(TokenType::BYTE);
    }
    std::string escaped;
    for (char ch : text) escaped += ch == ' ' ? std::string("\xe2\x96\x81") : std::string(1, ch);
    v.tokens.push_back(std::move(escaped));
    v.scores.push_back(score);
    v.token_types.push_back(type);
  }
  v.unk_id = 0;
  v.bos_id = 1;
  v.eos_id = 2;
  v.sep_id = -1;
  v.pad_id = -1;
  return v;
}

}  // namespace

void convert_llama2c(const std::string& model_path, const std::string& tok_path, const std::string& out,
                     const ConvertOptions& o, const bundle::Job& job) {
  MappedFile model(model_path, o.input), tok(tok_path, o.input);
  const Header c = read_header(model);
  const int64_t hd = c.dim / c.n_head, kv = hd * c.n_kv, L = c.n_layer;
  // Offsets (in floats) of each weight array, in file order. Sizes are
  // products of header values up to 2^24 each: checked for overflow.
  int64_t at = 7;  // the header is 7 int32 = 7 floats
  auto take = [&](std::initializer_list<int64_t> dims) {
    int64_t n = 1;
    for (int64_t d : dims)
      if (__builtin_mul_overflow(n, d, &n) || n > (int64_t(1) << 50))
        fail(BRISK_ERR_BAD_FORMAT, "'" + model_path + "': header sizes are impossibly large");
    const int64_t p = at;
    at += n;
    if (at > (int64_t(1) << 50)) fail(BRISK_ERR_BAD_FORMAT, "'" + model_path + "': header sizes are impossibly large");
    return p;
  };
  const int64_t emb = take({c.vocab, c.dim}), rms_att = take({L, c.dim}), wq = take({L, c.dim, c.dim}),
                wk = take({L, kv, c.dim}), wv = take({L, kv, c.dim}), wo = take({L, c.dim, c.dim}),
                rms_ffn = take({L, c.dim}), w1 = take({L, c.hidden, c.dim}), w2 = take({L, c.dim, c.hidden}),
                w3 = take({L, c.hidden, c.dim}), rms_final = take({c.dim});
  take({c.seq_len, hd});  // freq_cis_real, freq_cis_imag: llama.cpp computes rope itself
  const int64_t wcls = c.shared ? emb : take({c.vocab, c.dim});
  if (static_cast<uint64_t>(at) * 4 != model.size())
    fail(BRISK_ERR_BAD_FORMAT, "'" + model_path + "': " + std::to_string(model.size()) + " bytes, but its header (dim " +
                                   std::to_string(c.dim) + ", " + std::to_string(L) + " layers, vocab " +
                                   std::to_string(c.vocab) + ") needs " + std::to_string(at * 4));
  VocabData vocab = read_tokenizer(tok, c.vocab);

  const TensorType want = o.auto_type ? TensorType::F32 : o.type;
  gguf::Writer w;
  w.add_string("general.architecture", "llama");
  w.add_string("general.name", o.name.empty() ? "llama" : o.name);
  add_vocab(w, vocab);
  // The checkpoint's own training context (llama.cpp's converter writes its n_ctx default instead).
  w.add_u32("llama.context_length", static_cast<uint32_t>(c.seq_len));
  w.add_u32("llama.embedding_length", static_cast<uint32_t>(c.dim));
  w.add_u32("llama.feed_forward_length", static_cast<uint32_t>(c.hidden));
  w.add_u32("llama.attention.head_count", static_cast<uint32_t>(c.n_head));
  w.add_u32("llama.attention.head_count_kv", static_cast<uint32_t>(c.n_kv));
  w.add_u32("llama.block_count", static_cast<uint32_t>(L));
  w.add_u32("llama.rope.dimension_count", static_cast<uint32_t>(hd));
  w.add_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);

  const uint8_t* base = model.data();
  std::vector<PlannedTensor> plan;
  auto add = [&](const std::string& name, int64_t offset, int64_t cols, int64_t rows) {
    PlannedTensor t;
    t.name = name;
    t.ne = rows > 1 ? std::vector<int64_t>{cols, rows} : std::vector<int64_t>{cols};
    t.src = base + offset * 4;
    t.type = storage_type(want, cols, rows > 1);
    plan.push_back(std::move(t));
  };
  // llama.cpp's order, so the files line up tensor for tensor.
  add("token_embd.weight", emb, c.dim, c.vocab);
  add("output_norm.weight", rms_final, c.dim, 1);
  add("output.weight", wcls, c.dim, c.vocab);
  for (int64_t l = 0; l < L; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    add(p + "attn_q.weight", wq + l * c.dim * c.dim, c.dim, c.dim);
    add(p + "attn_k.weight", wk + l * kv * c.dim, c.dim, kv);
    add(p + "attn_v.weight", wv + l * kv * c.dim, c.dim, kv);
    add(p + "attn_output.weight", wo + l * c.dim * c.dim, c.dim, c.dim);
    add(p + "attn_norm.weight", rms_att + l * c.dim, c.dim, 1);
    add(p + "ffn_gate.weight", w1 + l * c.hidden * c.dim, c.dim, c.hidden);
    add(p + "ffn_down.weight", w2 + l * c.dim * c.hidden, c.hidden, c.dim);
    add(p + "ffn_up.weight", w3 + l * c.hidden * c.dim, c.dim, c.hidden);
    add(p + "ffn_norm.weight", rms_ffn + l * c.dim, c.dim, 1);
  }
  write_model(w, plan, want, out, bundle::tool_string("convert --from-llama2c"), [&] {
    bundle::Hasher h;
    hash_and_release(h, model.data(), model.size(), o.input);
    hash_and_release(h, tok.data(), tok.size(), o.input);
    return h.digest();
  }, job, o.input);
}

}  // namespace brisk::convert
