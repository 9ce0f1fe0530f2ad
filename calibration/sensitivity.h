// SPDX-License-Identifier: MIT
// Automatic per-tensor precision. For every weight matrix and candidate type
// we predict the damage (mean KL divergence of the output against the source
// model) that quantizing that matrix alone would do, then choose one type per
// matrix minimising the summed damage within a byte budget (knapsack DP).
//
// Damage model ("kl" method): the importance-weighted squared quantization
// error E_t(T) = sum_rows sum_j imp_j (w_ij - q_ij)^2 is computed for every
// candidate; the KL is measured once per matrix, at its cheapest candidate,
// on a sample of the calibration text; damage_t(T) = KL_t(T0) * E_t(T) / E_t(T0).
// The "proxy" method skips the measurement and uses E_t(T) scaled by the
// matrix's share of the model's output sensitivity (all matrices equal).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/tensor_type.h"
#include "model/model.h"
#include "quantize/quantize.h"

namespace brisk::calib {

struct Candidate {
  TensorType type;
  uint64_t bytes = 0;
  double error = 0;   // importance-weighted squared error
  double damage = 0;  // predicted KL contribution
  double measured = -1;  // measured KL (only with measure_all_types)
};

struct TensorSensitivity {
  std::string name;
  std::vector<Candidate> candidates;  // cheapest first
  double measured_kld = -1;           // at candidates[0] (kl method)
  size_t chosen = 0;
};

struct SensitivityOptions {
  bool measure_kl = true;
  bool measure_all_types = false;  // validation: measure every candidate, not just the cheapest
  std::vector<std::vector<int32_t>> sample_chunks;  // calibration text for the KL measurement
  int n_ctx = 256;
  int n_threads = 0;
  std::vector<TensorType> types = {TensorType::Q4_0, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K,
                                   TensorType::Q8_0};
  std::function<bool(uint64_t, uint64_t, const std::string&)> progress;  // false: cancel
};

// `source` is the F32/F16 model being quantized; `plan` its tensors.
std::vector<TensorSensitivity> measure_sensitivity(const Model& source, const std::vector<quantize::TensorPlan>& plan,
                                                   const quantize::ImportanceMap& importance,
                                                   const SensitivityOptions& options);

// Picks candidates[chosen] for every tensor with total bytes <= budget and
// minimal summed damage. Throws BRISK_ERR_INVALID_ARGUMENT if even the
// cheapest choice does not fit. Returns the predicted total damage.
double allocate(std::vector<TensorSensitivity>& tensors, uint64_t budget_bytes);

// Spearman rank correlation of two equally long series (proxy vs measured).
double spearman(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace brisk::calib
