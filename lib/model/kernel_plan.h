// SPDX-License-Identifier: MIT
// The kernel plan: for each weight type of a model, which layout (GGUF rows
// or packed) and which kernel variant (kernels/variants.h) runs each column
// class. Like FFTW's planner, the choice is measured on the machine at hand,
// on the model's own matrices, and cached per machine and model shape
// (model/plan_cache.h) so the next load only reads it.
//
// Why measure: the fastest one-column kernel differs between machines of the
// same ISA (prefetch schemes that win on one lose on another), and whether
// AMX or VNNI runs a prompt faster depends on the shapes. A fixed plan (the
// ISA's default tables, as without a planner) is kept for reproducible runs.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/tensor_type.h"
#include "kernels/variants.h"

namespace brisk {

struct Weights;

enum class PlanMode {
  automatic,  // the cached plan if valid, else measure and cache
  fixed,      // the ISA's default tables, nothing measured or cached
  measure,    // measure even if a cached plan exists, then cache
};
// "auto", "fixed", "measure"; parse returns false for anything else.
const char* plan_mode_name(PlanMode m);
bool parse_plan_mode(const std::string& s, PlanMode* out);
// BRISK_PLAN=auto|fixed|measure if set (tests pin the fixed plan with it),
// else automatic.
PlanMode default_plan_mode();
// BRISK_PLAN_CONFIRM_AFTER (seconds, >= 0) if set, else 600.
double default_confirm_after_seconds();

struct PlanOptions {
  PlanMode mode = default_plan_mode();
  std::string cache_dir;  // "": $BRISK_CACHE_DIR, $XDG_CACHE_HOME/brisk, ~/.cache/brisk
  int n_threads = 0;      // threads to measure with (0: one per physical core)
  double budget_seconds = 2.0;  // measuring stops (defaults fill in) past this
  // A variant that beats its layout's baseline runs only once a second
  // measuring, at least this long after the first, finds it faster too (a
  // later load makes it, or a later `brisk tune`): the host's slow phases
  // (memory contended by other VMs) can reorder kernels for minutes, and a
  // plan measured in one would otherwise stick.
  double confirm_after_seconds = default_confirm_after_seconds();
  std::function<void(int level, const std::string& message)> log;  // level: 1 warn, 2 info
};

struct TypePlan {
  TensorType type = TensorType::F32;
  bool packed = false;
  kernels::KernelVariant kernel[kernels::kColClasses];
  // Weight bytes read per second where this class was measured (0: not
  // measured; the ISA default was taken).
  double gbps[kernels::kColClasses] = {};
  // A variant that won one measuring and waits for a second (name nullptr:
  // none), the weight bytes per second it read, and when (unix seconds) it
  // first won. kernel[c] is the baseline meanwhile, unless the variant read
  // at least kRunPendingRatio times as fast as the baseline: then it runs
  // already (kernel[c] == pending[c]) and the second measuring may drop it.
  kernels::KernelVariant pending[kernels::kColClasses];
  double pending_gbps[kernels::kColClasses] = {};
  double pending_since[kernels::kColClasses] = {};
};

struct KernelPlan {
  std::string source;      // "fixed", "measured", "cached"
  std::string cache_file;  // where it was read from or written to ("" if none)
  std::string note;        // why a cache was not used, or was not written
  int n_threads = 0;       // threads it was measured with
  double seconds = 0;      // time spent measuring (or reading), packing apart
  double pack_seconds = 0; // time spent packing the weights (part of any load)
  double measured_at = 0;  // when it was measured (unix seconds)
  double confirm_after = 0;  // PlanOptions::confirm_after_seconds it was made with
  std::string confirmed;   // what this load's confirming measuring decided ("" if none ran)
  std::vector<TypePlan> types;

  const TypePlan* find(TensorType t) const;
  // A few lines: the source, then one line per type.
  std::string describe() const;
};

// Plans the kernels for `weights` (bound to the file, not yet packed), packs
// what the plan packs, and sets every matrix's per-class kernels.
KernelPlan plan_kernels(Weights& weights, const PlanOptions& options);

// A plan's time (unix seconds) as "2026-12-07 07:42 UTC".
std::string plan_time_text(double unix_seconds);

// The fixed plan's choice for type t (what runs without a planner).
TypePlan default_type_plan(TensorType t);

// The measuring's two rules, apart for the tests:
// - The rows of a matrix to time so that at most `bytes` of it are read:
//   its first rows, whole pairs of 16-row groups (as the passes split
//   them), at least one pair, at most all.
int64_t plan_sample_rows(int64_t rows, size_t row_bytes, uint64_t bytes);
// - Which candidates go on from a class's preliminary rounds (two rounds on
//   a quarter of the sample, seconds[i] the fastest of candidate i) to the
//   full ones: every layout's default (is_default), which the others must
//   beat and which weigh the layouts against each other, and of the others
//   the fastest three within 1.25x of the fastest candidate. Indices, the
//   fastest first.
std::vector<size_t> plan_finalists(const std::vector<double>& seconds, const std::vector<bool>& is_default);
// - Whether a variant displaces its layout's default, from their seconds per
//   round (the rounds interleave the candidates): its fastest round must be
//   faster than the default's by `margin` (a fraction), and it must be the
//   faster of the two in every round, so that a disturbance of one or two
//   of the default's rounds cannot make it lose.
bool plan_variant_wins(const std::vector<double>& variant, const std::vector<double>& def, double margin);

// - What a measuring that found `winner` faster than its layout's baseline
//   (tp.kernel[c], with gbps[c] its figure) at unix time `now` does to class
//   c: the winner runs at once if the previous plan of the same key
//   (`prev`, measured at `prev_at`; nullptr if none) had it win too, at
//   least `confirm_after` seconds before (as its kernel or pending
//   variant); otherwise it is left pending, since its first win, and runs
//   meanwhile if it read at least kRunPendingRatio times the baseline's
//   bytes per second (a baseline that slow on this machine costs more than
//   a mistaken choice would until the second measuring).
constexpr double kRunPendingRatio = 1.5;
void plan_settle_winner(TypePlan& tp, int c, const kernels::KernelVariant& winner, double winner_gbps,
                        const TypePlan* prev, double prev_at, double now, double confirm_after);

// Applies a plan to bound weights: packs the types it packs (releasing file
// pages) and sets the matrices' kernels. Types the plan does not name keep
// the default.
void apply_plan(Weights& weights, const KernelPlan& plan);

}  // namespace brisk
