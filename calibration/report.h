// SPDX-License-Identifier: MIT
// The calibration report written beside a calibrated model: what data was
// used (with hashes), how many tokens, the per-tensor recipe, size, bits per
// weight and quality on held-out text. Markdown for people, JSON for tools.
#pragma once
#include <string>

#include "calibration/calibrated.h"

namespace brisk::calib {

void write_report(const CalibratedResult& res, const std::string& in_path, const std::string& out_path,
                  const CalibratedOptions& o, const Stats& stats, const std::string& stats_hash);

// Writes text to path through a temporary file and a rename.
void write_text_atomic(const std::string& path, const std::string& text);

}  // namespace brisk::calib
