// SPDX-License-Identifier: MIT
// brisk quantize --calibration: importance-weighted quantization, optional
// automatic per-tensor precision within a size budget, the recipe written
// into the model's metadata, and a report (Markdown + JSON) with quality
// figures measured on held-out text.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "calibration/ppl.h"
#include "calibration/sensitivity.h"
#include "calibration/stats.h"
#include "quantize/quantize.h"

namespace brisk::calib {

struct CalibratedOptions {
  quantize::QuantizeOptions quant;  // preset (the baseline recipe), overrides, threads, callbacks
  std::string stats_path;
  // The calibration data files, as given to calibrate; they must hash as the
  // statistics record. Empty: no text is read (paths recorded in the
  // statistics file are never opened on its word).
  std::vector<std::string> data_paths;
  uint64_t target_size = 0;  // bytes of the output file; 0: no budget
  double target_bpw = 0;     // alternative: bits per weight over all tensors
  bool measure_kl = true;    // false: rank by importance-weighted error alone
  uint64_t sensitivity_tokens = 1024;
  bool report = true;
  std::string eval_file;       // evaluate on this text instead of the held-out split
  bool eval_on_calib = false;  // allow evaluating on the calibration text (flagged loudly)
  int eval_max_chunks = 64;    // 0: all
  std::function<bool(const char*, uint64_t, uint64_t, const std::string&)> progress;  // false: cancel
  std::function<void(const std::string&)> warn;
};

struct CalibratedResult {
  quantize::QuantizeResult quant;
  std::vector<TensorSensitivity> sensitivity;  // empty without a budget
  double predicted_kld = 0;
  std::optional<PplResult> eval;
  std::string eval_text_desc;
  std::string report_md, report_json;  // paths written
  std::vector<std::string> warnings;
};

CalibratedResult quantize_calibrated(const std::string& in_path, const std::string& out_path,
                                     const CalibratedOptions& options);

// "<out without .gguf>.report.md" / ".report.json".
std::string report_path(const std::string& out_path, const char* ext);

}  // namespace brisk::calib
