// SPDX-License-Identifier: MIT
// The largest number of sequence slots the memory plan allows, so a batch
// run can use as many as fit without trial and error.
#pragma once
#include "engine/engine.h"

namespace brisk {

// The largest n_seq_max (at most `cap`) for which plan_memory() with the
// other options unchanged stays within the available memory (less the same
// 5% headroom Engine keeps); 0 if not even one sequence fits.
int max_parallel(const Model& model, EngineOptions options, int cap);

}  // namespace brisk
