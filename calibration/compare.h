// SPDX-License-Identifier: MIT
// brisk compare: greedy continuations of the same prompts from two models
// (say the source and a quantized file), and where they part.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/model.h"

namespace brisk::calib {

struct CompareOptions {
  int n_predict = 64;
  int n_ctx = 0;  // 0: min(training context, 4096)
  int n_threads = 0;
  bool stop_at_eos = true;
  std::function<bool(uint64_t, uint64_t)> progress;  // (prompts done, total); false: cancel
};

struct PromptComparison {
  std::string prompt;
  std::vector<int32_t> tokens_a, tokens_b;
  std::string text_a, text_b;
  bool identical = false;
  int first_divergence_token = -1;  // -1: none
  int first_divergence_char = -1;   // UTF-8 characters into the generated text; -1: none
};

struct CompareResult {
  std::vector<PromptComparison> prompts;
  double identical_pct = 0;
  double mean_first_divergence_token = 0;  // over diverging prompts
  int n_diverging = 0;
};

CompareResult compare_models(const Model& a, const Model& b, const std::vector<std::string>& prompts,
                             const CompareOptions& options);
std::string compare_json(const CompareResult& r, const std::string& a_path, const std::string& b_path);

}  // namespace brisk::calib
