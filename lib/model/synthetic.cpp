// SPDX-License-Identifier: MIT
#include "model/synthetic.h"

#include <algorithm>
#include <cmath>
#include <thread>

#include "bundle/manifest.h"
#include "core/error.h"
#include "gguf/writer.h"
#include "quant/quant.h"

namespace brisk {

const std::vector<SyntheticShape>& synthetic_shapes() {
  // Shapes from the models' published configs.
  static const std::vector<SyntheticShape> shapes = {
      {"tiny", "llama", 256, 4, 8, 4, 768, 2048, 1024, 10000.0f, false},
      {"tinyllama-1.1b", "llama", 2048, 22, 32, 4, 5632, 32000, 2048, 10000.0f, false},
      {"qwen2.5-0.5b", "qwen2", 896, 24, 14, 2, 4864, 151936, 32768, 1000000.0f, true},
      {"qwen2.5-1.5b", "qwen2", 1536, 28, 12, 2, 8960, 151936, 32768, 1000000.0f, true},
      {"llama-2-7b", "llama", 4096, 32, 32, 32, 11008, 32000, 4096, 10000.0f, false},
      {"llama-3-8b", "llama", 4096, 32, 32, 8, 14336, 128256, 8192, 500000.0f, false},
      {"mistral-7b", "llama", 4096, 32, 32, 8, 14336, 32000, 32768, 1000000.0f, false},
  };
  return shapes;
}

const SyntheticShape& find_synthetic_shape(const std::string& name) {
  std::string known;
  for (const SyntheticShape& s : synthetic_shapes()) {
    if (s.name == name) return s;
    known += (known.empty() ? "" : ", ") + s.name;
  }
  fail(BRISK_ERR_INVALID_ARGUMENT, "unknown synthetic shape '" + name + "' (known: " + known + ")");
}

namespace {

// splitmix64: fast, seedable per row so rows can be made in parallel and the
// result does not depend on the thread count.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Approximately normal (Irwin-Hall of 4 uniforms), mean 0, std 1.
  float normal() {
    float sum = 0;
    for (int i = 0; i < 4; ++i) sum += static_cast<float>(next() >> 40) * (1.0f / 16777216.0f);
    return (sum - 2.0f) * 1.7320508f;
  }
};

void synth_vocab(gguf::Writer& w, int n_vocab) {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  tokens.reserve(n_vocab);
  auto add = [&](const std::string& t, float score, int type) {
    tokens.push_back(t);
    scores.push_back(score);
    types.push_back(type);
  };
  add("<unk>", 0, 2);
  add("<s>", 0, 3);
  add("</s>", 0, 3);
  char buf[8];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    add(buf, 0, 6);
  }
  // Single letters, then "▁" + letter strings in a fixed order: enough merges
  // that English-like text tokenizes into a few tokens per word.
  const std::string space = "\xe2\x96\x81";
  const std::string letters = "etaoinshrdlcumwfgypbvkjxqz";
  int rank = 0;
  add(space, -static_cast<float>(rank++), 1);
  for (char c : letters) add(std::string(1, c), -static_cast<float>(rank++), 1);
  for (char c : letters) add(space + c, -static_cast<float>(rank++), 1);
  for (size_t len = 2; static_cast<int>(tokens.size()) < n_vocab; ++len) {
    // All strings of `len` letters drawn from the most common ones, with and without "▁".
    const size_t alphabet = std::min<size_t>(letters.size(), len == 2 ? 26 : len == 3 ? 12 : 8);
    std::vector<size_t> idx(len, 0);
    while (static_cast<int>(tokens.size()) < n_vocab) {
      std::string s;
      for (size_t i : idx) s += letters[i];
      add(s, -static_cast<float>(rank++), 1);
      if (static_cast<int>(tokens.size()) < n_vocab) add(space + s, -static_cast<float>(rank++), 1);
      size_t k = 0;
      while (k < len && ++idx[k] == alphabet) idx[k++] = 0;
      if (k == len) break;
    }
  }
  w.add_string("tokenizer.ggml.model", "llama");
  w.add_strings("tokenizer.ggml.tokens", tokens);
  w.add_f32s("tokenizer.ggml.scores", scores);
  w.add_i32s("tokenizer.ggml.token_type", types);
  w.add_u32("tokenizer.ggml.bos_token_id", 1);
  w.add_u32("tokenizer.ggml.eos_token_id", 2);
  w.add_u32("tokenizer.ggml.unknown_token_id", 0);
}

}  // namespace

void write_synthetic_model(const SyntheticShape& s, TensorType type, uint64_t seed, const std::string& path,
                           int n_threads) {
  if (!quant::can_quantize(type))
    fail(BRISK_ERR_INVALID_ARGUMENT, std::string("cannot write weights of type ") + type_name(type));
  gguf::Writer w;
  const std::string a = s.arch + ".";
  w.add_string("general.architecture", s.arch);
  w.add_string("general.name", "synthetic " + s.name);
  w.add_u32(a + "context_length", static_cast<uint32_t>(s.n_ctx));
  w.add_u32(a + "embedding_length", static_cast<uint32_t>(s.n_embd));
  w.add_u32(a + "block_count", static_cast<uint32_t>(s.n_layer));
  w.add_u32(a + "feed_forward_length", static_cast<uint32_t>(s.n_ff));
  w.add_u32(a + "attention.head_count", static_cast<uint32_t>(s.n_head));
  w.add_u32(a + "attention.head_count_kv", static_cast<uint32_t>(s.n_head_kv));
  w.add_f32(a + "attention.layer_norm_rms_epsilon", 1e-5f);
  w.add_f32(a + "rope.freq_base", s.rope_base);
  synth_vocab(w, s.n_vocab);

  const int64_t hd = s.n_embd / s.n_head;
  const int64_t q = s.n_embd, kv = hd * s.n_head_kv;
  struct Spec {
    int64_t cols, rows;
    bool matrix;
    float std;  // matrices: standard deviation; vectors: the constant value
  };
  std::vector<Spec> specs;
  auto matrix_type = [&](int64_t cols) {
    return cols % type_traits(type).block_size == 0 ? type : TensorType::F16;
  };
  auto add = [&](const std::string& name, int64_t cols, int64_t rows, bool matrix, float std) {
    std::vector<int64_t> ne = rows > 1 ? std::vector<int64_t>{cols, rows} : std::vector<int64_t>{cols};
    w.add_tensor(name, matrix ? matrix_type(cols) : TensorType::F32, ne);
    specs.push_back({cols, rows, matrix, std});
  };
  const float std0 = 0.02f;
  add("token_embd.weight", s.n_embd, s.n_vocab, true, 1.0f);
  // For vectors the last argument is their constant value.
  add("output_norm.weight", s.n_embd, 1, false, 1.0f);
  if (!s.tied_embeddings) add("output.weight", s.n_embd, s.n_vocab, true, std0);
  for (int l = 0; l < s.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    add(p + "attn_norm.weight", s.n_embd, 1, false, 1.0f);
    add(p + "attn_q.weight", s.n_embd, q, true, std0);
    add(p + "attn_k.weight", s.n_embd, kv, true, std0);
    add(p + "attn_v.weight", s.n_embd, kv, true, std0);
    if (s.arch == "qwen2") {
      add(p + "attn_q.bias", q, 1, false, 0);
      add(p + "attn_k.bias", kv, 1, false, 0);
      add(p + "attn_v.bias", kv, 1, false, 0);
    }
    add(p + "attn_output.weight", q, s.n_embd, true, std0);
    add(p + "ffn_norm.weight", s.n_embd, 1, false, 1.0f);
    add(p + "ffn_gate.weight", s.n_embd, s.n_ff, true, std0);
    add(p + "ffn_up.weight", s.n_embd, s.n_ff, true, std0);
    add(p + "ffn_down.weight", s.n_ff, s.n_embd, true, std0);
  }

  const int threads = n_threads > 0 ? n_threads : std::max(1u, std::thread::hardware_concurrency());
  std::vector<uint8_t> out;
  auto produce = [&](size_t i, const gguf::Writer::Sink& sink) {
    const Spec& sp = specs[i];
    if (!sp.matrix) {
      // Vectors are constant (norm weights 1, biases 0): the random
      // matrices carry all the variety.
      std::vector<float> v(static_cast<size_t>(sp.cols), sp.std);
      sink(v.data(), v.size() * sizeof(float));
      return;
    }
    const TensorType t = matrix_type(sp.cols);
    const size_t rb = row_bytes(t, sp.cols);
    out.resize(rb * static_cast<size_t>(sp.rows));
    std::vector<std::thread> pool;
    for (int th = 0; th < threads; ++th) {
      pool.emplace_back([&, th] {
        std::vector<float> row(static_cast<size_t>(sp.cols));
        for (int64_t r = th; r < sp.rows; r += threads) {
          // Each row's stream starts from a hash of (seed, tensor, row): a plain
          // XOR of them made rows shifted copies of each other.
          Rng mix{seed};
          mix.s ^= mix.next() + static_cast<uint64_t>(i);
          mix.s ^= mix.next() + static_cast<uint64_t>(r);
          Rng rng{mix.next()};
          for (float& x : row) x = rng.normal() * sp.std;
          quant::quantize_row(t, row.data(), out.data() + static_cast<size_t>(r) * rb, sp.cols);
        }
      });
    }
    for (std::thread& th : pool) th.join();
    sink(out.data(), out.size());
  };
  // The "source" of a synthetic model is its recipe.
  const std::string recipe = s.name + " " + type_name(type) + " seed " + std::to_string(seed);
  bundle::write_with_manifest(w, path, produce, bundle::tool_string("synth"),
                              [&] { return bundle::hash_bytes(recipe.data(), recipe.size()); });
}

}  // namespace brisk
