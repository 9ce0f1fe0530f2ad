// SPDX-License-Identifier: MIT
// A loaded model: the mapped GGUF file, its configuration, its weights bound
// in place and its tokenizer. Immutable after open(); share it freely between
// threads and sessions.
#pragma once
#include <memory>
#include <string>

#include "gguf/gguf.h"
#include "model/config.h"
#include "model/kernel_plan.h"
#include "model/weights.h"
#include "tokenizer/tokenizer.h"

namespace brisk {

struct ModelOpenOptions {
  bool vocab_only = false;  // tokenizer only: tensors are not bound
  MapOptions map;           // mlock, or read into memory instead of mapping
  PlanOptions plan;         // how the matrix kernels are chosen (model/kernel_plan.h)
};

// Options for loads whose results must not depend on the machine's kernel
// plan (calibration statistics, quality reports, the doctor's memory
// figures): the fixed plan, nothing measured or cached.
inline ModelOpenOptions reproducible_load() {
  ModelOpenOptions o;
  o.plan.mode = PlanMode::fixed;
  return o;
}

class Model {
 public:
  static std::unique_ptr<Model> open(const std::string& path, const ModelOpenOptions& options = {});

  const gguf::File& file() const { return *file_; }
  const ModelConfig& config() const { return config_; }
  const Weights& weights() const { return weights_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  // Which layout and kernels run each weight type (empty for vocab-only).
  const KernelPlan& kernel_plan() const { return plan_; }
  bool vocab_only() const { return vocab_only_; }
  // "llama, 5 layers, dim 64, 8 heads (4 kv), ffn 172, vocab 512, f32, 1.19 MB"
  std::string describe() const;
  // The type most matrix bytes are stored in ("q4_0"), "" for vocab-only.
  std::string main_weight_type() const;

 private:
  Model() = default;
  std::unique_ptr<gguf::File> file_;
  ModelConfig config_;
  Weights weights_;
  KernelPlan plan_;
  std::unique_ptr<Tokenizer> tokenizer_;
  bool vocab_only_ = false;
};

}  // namespace brisk
