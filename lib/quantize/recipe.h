// SPDX-License-Identifier: MIT
// Which type each tensor of a model gets when it is quantized: presets named
// like llama-quantize's ftypes, llama.cpp's per-tensor mixture rules
// (llama_tensor_get_type), user overrides by regex, and the fallback for rows
// that do not fit a type's block size. Pure planning: no tensor data is read.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/tensor_type.h"
#include "gguf/gguf.h"

namespace brisk::quantize {

// How the per-tensor rules treat a preset.
enum class Rules {
  plain,      // every matrix gets the default type (f16, bf16, q4_k, q5_k)
  legacy,     // q8_0/q4_0/q4_1: output.weight Q6_K unless the default is Q8_0
  k_m,        // llama.cpp's Q4_K_M mixture
  k_s,        // llama.cpp's Q4_K_S mixture
  mixed_4_8,  // attention (q/k/v/output) Q8_0, the rest Q4_K (Q4_0 if rows don't fit 256)
};

struct Preset {
  const char* name;       // "q4_k_m"
  TensorType base;        // the default type of a matrix
  uint32_t file_type;     // general.file_type as llama.cpp writes it (llama_ftype)
  Rules rules;
  bool quantized() const { return base != TensorType::F16 && base != TensorType::BF16 && base != TensorType::F32; }
};

// Known presets: q8_0 q4_0 q4_1 q4_k_m q4_k_s q6_k f16 bf16 q4_k q5_k mixed-4-8.
const std::vector<Preset>& presets();
// Throws BRISK_ERR_INVALID_ARGUMENT listing the known names.
const Preset& find_preset(const std::string& name);

struct TypeOverride {
  std::string pattern;  // ECMAScript regex, searched in the tensor name
  TensorType type;
};

struct TensorPlan {
  std::string name;
  TensorType src_type = TensorType::F32;
  TensorType type = TensorType::F32;  // what gets written
  TensorType wanted = TensorType::F32;  // before the block-size fallback
  int64_t ne[4] = {1, 1, 1, 1};
  uint32_t n_dims = 0;
  bool is_matrix = false;  // a weight that quantization applies to
  std::string why;         // "mixture rule", "override attn_.*", "fallback: 172 cols" ...
  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  uint64_t bytes() const { return row_bytes(type, ne[0]) * static_cast<uint64_t>(ne[1] * ne[2] * ne[3]); }
};

struct PlanOptions {
  std::vector<TypeOverride> overrides;            // first match wins
  std::map<std::string, TensorType> exact_types;  // by full name (automatic precision); beats overrides
};

// The tensors of `in` in llama.cpp's output order (non-layer tensors by name,
// then layer by layer, by name within a layer), each with its chosen type.
std::vector<TensorPlan> plan_model(const gguf::File& in, const Preset& preset, const PlanOptions& options);

// A type whose blocks fit rows of `cols` values: `t` itself, or llama.cpp's
// fallback chain (Q6_K -> Q8_0, Q4_K -> Q4_0 here since brisk has no Q5_0,
// Q5_K -> Q8_0; then F16 when even 32 does not divide the row).
TensorType fit_type(TensorType t, int64_t cols);

// llama.cpp's use_more_bits(i_layer, n_layer) from llama_tensor_get_type.
bool use_more_bits(int i_layer, int n_layer);

// True for tensors a quantizer may change (2-D+ weights, not norms).
bool is_quantizable(const gguf::TensorInfo& t);

}  // namespace brisk::quantize
