// SPDX-License-Identifier: MIT
#include "quantize/recipe.h"

#include <algorithm>
#include <cstdio>
#include <regex>

#include "core/error.h"

namespace brisk::quantize {

const std::vector<Preset>& presets() {
  // file_type values are llama.cpp's llama_ftype (so tools that read
  // general.file_type describe our files the way they describe theirs).
  static const std::vector<Preset> p = {
      {"q8_0", TensorType::Q8_0, 7, Rules::legacy},      {"q4_0", TensorType::Q4_0, 2, Rules::legacy},
      {"q4_1", TensorType::Q4_1, 3, Rules::legacy},      {"q4_k_m", TensorType::Q4_K, 15, Rules::k_m},
      {"q4_k_s", TensorType::Q4_K, 14, Rules::k_s},      {"q6_k", TensorType::Q6_K, 18, Rules::legacy},
      {"f16", TensorType::F16, 1, Rules::plain},         {"bf16", TensorType::BF16, 32, Rules::plain},
      {"q4_k", TensorType::Q4_K, 14, Rules::plain},      {"q5_k", TensorType::Q5_K, 16, Rules::plain},
      {"mixed-4-8", TensorType::Q4_K, 15, Rules::mixed_4_8},
  };
  return p;
}

const Preset& find_preset(const std::string& name) {
  std::string known;
  for (const Preset& p : presets()) {
    if (name == p.name) return p;
    known += (known.empty() ? "" : ", ") + std::string(p.name);
  }
  fail(BRISK_ERR_INVALID_ARGUMENT, "unknown quantization type '" + name + "' (known: " + known + ")");
}

bool use_more_bits(int i_layer, int n_layer) {
  return i_layer < n_layer / 8 || i_layer >= 7 * n_layer / 8 || (i_layer - n_layer / 8) % 3 == 2;
}

TensorType fit_type(TensorType t, int64_t cols) {
  auto fits = [cols](TensorType x) { return cols % type_traits(x).block_size == 0; };
  if (fits(t)) return t;
  switch (t) {
    case TensorType::Q6_K:
    case TensorType::Q5_K: t = TensorType::Q8_0; break;  // llama.cpp: Q5_K -> Q5_1, which brisk lacks
    case TensorType::Q4_K: t = TensorType::Q4_0; break;  // llama.cpp: Q5_0, which brisk lacks
    default: break;
  }
  return fits(t) ? t : TensorType::F16;
}

bool is_quantizable(const gguf::TensorInfo& t) {
  // llama.cpp: names ending in "weight" with at least two dimensions > 1.
  int dims = 0;
  for (int i = 0; i < 4; ++i)
    if (t.ne[i] > 1) dims = i + 1;
  const std::string& n = t.name;
  return dims >= 2 && n.size() >= 6 && n.compare(n.size() - 6, 6, "weight") == 0;
}

namespace {

int layer_of(const std::string& name) {
  int l = -1;
  if (std::sscanf(name.c_str(), "blk.%d.", &l) != 1) l = -1;
  return l;
}

bool contains(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

// llama_tensor_get_type for the presets brisk offers. `i_v` / `i_down` count
// the attn_v / ffn_down tensors seen so far, as llama.cpp's quantize state does.
TensorType mixture_type(const Preset& p, const std::string& name, int64_t cols, bool has_output, int n_v, int n_down,
                        int& i_v, int& i_down) {
  TensorType t = p.base;
  if (name == "output.weight" || (!has_output && name == "token_embd.weight")) {
    if (cols % type_traits(t).block_size != 0) return TensorType::Q8_0;
    return t == TensorType::Q8_0 ? t : TensorType::Q6_K;
  }
  if (name == "token_embd.weight") return t;
  if (p.rules == Rules::mixed_4_8) {
    for (const char* a : {"attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_output.weight"})
      if (contains(name, a)) return TensorType::Q8_0;
    return t;
  }
  if (contains(name, "attn_v.weight")) {
    if (p.rules == Rules::k_m && use_more_bits(i_v, n_v)) t = TensorType::Q6_K;
    else if (p.rules == Rules::k_s && i_v < 4) t = TensorType::Q5_K;
    ++i_v;
  } else if (contains(name, "ffn_down")) {
    if (p.rules == Rules::k_m && use_more_bits(i_down, n_down)) t = TensorType::Q6_K;
    else if (p.rules == Rules::k_s && i_down < n_down / 8) t = TensorType::Q5_K;
    ++i_down;
  }
  return t;
}

}  // namespace

std::vector<TensorPlan> plan_model(const gguf::File& in, const Preset& preset, const PlanOptions& options) {
  std::vector<const gguf::TensorInfo*> order;
  for (const gguf::TensorInfo& t : in.tensors()) order.push_back(&t);
  // llama.cpp's weight_name_comparer: by layer number (non-layer first), then by name.
  std::stable_sort(order.begin(), order.end(), [](const gguf::TensorInfo* a, const gguf::TensorInfo* b) {
    const int la = layer_of(a->name), lb = layer_of(b->name);
    return la != lb ? la < lb : a->name < b->name;
  });
  std::vector<std::regex> patterns;
  for (const TypeOverride& o : options.overrides) {
    try {
      patterns.emplace_back(o.pattern);
    } catch (const std::regex_error& e) {
      fail(BRISK_ERR_INVALID_ARGUMENT, "bad --tensor-type pattern '" + o.pattern + "': " + e.what());
    }
  }
  const bool has_output = in.find_tensor("output.weight") != nullptr;
  int n_v = 0, n_down = 0, i_v = 0, i_down = 0;
  for (const gguf::TensorInfo* t : order) {
    n_v += contains(t->name, "attn_v.weight");
    n_down += contains(t->name, "ffn_down");
  }

  std::vector<TensorPlan> plan;
  for (const gguf::TensorInfo* t : order) {
    TensorPlan tp;
    tp.name = t->name;
    tp.src_type = t->type;
    tp.n_dims = t->n_dims;
    std::copy(t->ne, t->ne + 4, tp.ne);
    tp.is_matrix = is_quantizable(*t);
    if (!tp.is_matrix) {
      tp.type = tp.wanted = t->type;  // norms and other vectors are copied as they are
      plan.push_back(tp);
      continue;
    }
    const int64_t cols = t->ne[0];
    TensorType want = preset.base;
    tp.why = "default";
    if (preset.quantized() && preset.rules != Rules::plain) {
      want = mixture_type(preset, t->name, cols, has_output, n_v, n_down, i_v, i_down);
      if (want != preset.base) tp.why = "mixture rule";
    }
    // As llama.cpp: an override applies only where the rule's choice needed
    // no fallback; first matching pattern wins.
    if (fit_type(want, cols) == want) {
      for (size_t i = 0; i < patterns.size(); ++i) {
        if (std::regex_search(t->name, patterns[i])) {
          want = options.overrides[i].type;
          tp.why = "override " + options.overrides[i].pattern;
          break;
        }
      }
    }
    auto ex = options.exact_types.find(t->name);
    if (ex != options.exact_types.end()) {
      want = ex->second;
      tp.why = "recipe";
    }
    tp.wanted = want;
    tp.type = fit_type(want, cols);
    if (tp.type != want)
      tp.why = "fallback: " + std::to_string(cols) + " cols not divisible by " +
               std::to_string(type_traits(want).block_size) + " (" + type_name(want) + ")";
    plan.push_back(tp);
  }
  return plan;
}

}  // namespace brisk::quantize
