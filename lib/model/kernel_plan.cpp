// SPDX-License-Identifier: MIT
#include "model/kernel_plan.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <optional>
#include <random>

#include "core/error.h"
#include "kernels/packed.h"
#include "model/matmul_op.h"
#include "model/plan_cache.h"
#include "model/weights.h"
#include "system/cgroup.h"
#include "threads/thread_pool.h"

namespace brisk {

using kernels::ColClass;
using kernels::KernelVariant;
using kernels::kColClasses;

const char* plan_mode_name(PlanMode m) {
  switch (m) {
    case PlanMode::automatic: return "auto";
    case PlanMode::fixed: return "fixed";
    case PlanMode::measure: return "measure";
  }
  return "?";
}

bool parse_plan_mode(const std::string& s, PlanMode* out) {
  for (PlanMode m : {PlanMode::automatic, PlanMode::fixed, PlanMode::measure})
    if (s == plan_mode_name(m)) return *out = m, true;
  return false;
}

PlanMode default_plan_mode() {
  PlanMode m = PlanMode::automatic;
  const char* env = std::getenv("BRISK_PLAN");
  if (env && *env) parse_plan_mode(env, &m);
  return m;
}

double default_confirm_after_seconds() {
  const char* env = std::getenv("BRISK_PLAN_CONFIRM_AFTER");
  if (env && *env) {
    char* end = nullptr;
    const double v = std::strtod(env, &end);
    if (end && *end == '\0' && v >= 0) return v;
  }
  return 600;
}

const TypePlan* KernelPlan::find(TensorType t) const {
  for (const TypePlan& tp : types)
    if (tp.type == t) return &tp;
  return nullptr;
}

std::string plan_time_text(double unix_seconds) {
  const auto t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  char buf[32];
  if (!gmtime_r(&t, &tm) || !std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm)) return "?";
  return buf;
}

std::string KernelPlan::describe() const {
  char buf[512];
  std::string s;
  if (source == "fixed") {
    std::snprintf(buf, sizeof buf, "kernel plan: fixed (the instruction set's baseline kernels; weights packed in %.2f s)\n",
                  pack_seconds);
    s = buf;
  } else {
    const char* threads = n_threads == 1 ? "" : "s";
    char packed[64];
    std::snprintf(packed, sizeof packed, " (weights packed in %.2f s)", pack_seconds);
    if (source == "cached") {
      std::snprintf(buf, sizeof buf, "kernel plan: cached, measured for %d thread%s, read in %.2f s from ", n_threads,
                    threads, seconds);
      s = buf + cache_file + packed + "\n";
    } else {
      std::snprintf(buf, sizeof buf, "kernel plan: %s in %.2f s for %d thread%s", source.c_str(), seconds, n_threads,
                    threads);
      s = buf + std::string(packed) + (cache_file.empty() ? "" : ", cached in " + cache_file) + "\n";
    }
  }
  if (!note.empty()) s += "  note: " + note + "\n";
  for (const TypePlan& tp : types) {
    std::snprintf(buf, sizeof buf, "  %-5s %-6s", type_name(tp.type), tp.packed ? "packed" : "rows");
    s += buf;
    for (int c = 0; c < kColClasses; ++c) {
      std::snprintf(buf, sizeof buf, "%s%s: %s", c ? " | " : " ", kernels::col_class_name(static_cast<ColClass>(c)),
                    tp.kernel[c].name ? tp.kernel[c].name : "?");
      s += buf;
      if (tp.gbps[c] > 0) {
        std::snprintf(buf, sizeof buf, " (%.1f GB/s)", tp.gbps[c]);
        s += buf;
      }
    }
    s += "\n";
  }
  for (const TypePlan& tp : types)
    for (int c = 0; c < kColClasses; ++c) {
      if (!tp.pending[c].name) continue;
      const bool runs = tp.pending[c].kernel == tp.kernel[c].kernel;
      std::snprintf(buf, sizeof buf, "  pending: %s %s: %s (%.1f GB/s), faster since %s; %s once a load from %s finds it faster again\n",
                    type_name(tp.type), kernels::col_class_name(static_cast<ColClass>(c)), tp.pending[c].name,
                    tp.pending_gbps[c], plan_time_text(tp.pending_since[c]).c_str(),
                    runs ? "runs already (far ahead of the baseline), kept" : "runs",
                    plan_time_text(tp.pending_since[c] + this->confirm_after).c_str());
      s += buf;
    }
  if (!confirmed.empty()) s += "  confirmed at this load: " + confirmed + "\n";
  return s;
}

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// apply_plan, returning its seconds (packing, most of it).
double timed_apply(Weights& w, const KernelPlan& plan) {
  const auto t0 = Clock::now();
  apply_plan(w, plan);
  return seconds_since(t0);
}

bool packing_disabled() {
  const char* env = std::getenv("BRISK_REPACK");
  return env && std::strcmp(env, "0") == 0;
}

// Columns each class is timed with (the 3-4 class at 4, where a kernel
// that reads 3 fast but 4 slowly would show), and how the classes weigh in
// the choice of a layout (which holds for every class): decode counts most.
constexpr int kClassCols[kColClasses] = {1, 2, 4, 16, 64};
constexpr double kClassWeight[kColClasses] = {0.4, 0.15, 0.15, 0.15, 0.15};
// Weight bytes timed per class: the classes of a few columns stream from
// memory as decode does, so they read (up to) the whole type; the
// compute-bound classes need far less to be timed.
constexpr uint64_t kClassSampleBytes[kColClasses] = {uint64_t{256} << 20, uint64_t{256} << 20, uint64_t{256} << 20,
                                                     uint64_t{160} << 20, uint64_t{24} << 20};
constexpr int kRounds = 3;
// How much faster than the default a variant (or the other layout, in the
// weighted sum) must measure to be chosen: below it, differences are
// mostly the machine's noise, and the default is the known quantity.
constexpr double kMargin = 0.03;
constexpr double kLayoutMargin = 0.05;

bool covers(const KernelVariant& v, int ncols) { return ncols >= v.min_cols && ncols <= v.max_cols; }

// The variants the planner may choose for t: the active ISA's and its extras
// (the scalar kernels only define the results, unless nothing else runs).
std::vector<KernelVariant> candidates(TensorType t) {
  std::vector<KernelVariant> out;
  const bool scalar_only = kernels::active_isa() == kernels::Isa::scalar;
  for (const KernelVariant& v : kernels::matmul_variants(t)) {
    if (v.isa == kernels::Isa::scalar && !scalar_only) continue;
    if (v.packed && (packing_disabled() || !kernels::packable(t))) continue;
    out.push_back(v);
  }
  return out;
}

// The planner's baseline for this layout: the active ISA's variant marked
// baseline if there is one, else the one whose table the default lookup
// returns (for packed weights at an ISA without packed kernels, scalar's,
// as MatmulOp falls back to).
KernelVariant default_variant(TensorType t, bool packed) {
  const kernels::MatmulKernel* k = packed ? kernels::packed_matmul_kernel(t) : &kernels::matmul_kernel(t);
  if (packed && !k) k = kernels::packed_matmul_kernel_for(t, kernels::Isa::scalar);
  const std::vector<KernelVariant> vs = kernels::matmul_variants(t);
  for (const KernelVariant& v : vs)
    if (v.baseline && v.packed == packed && v.isa == kernels::active_isa()) return v;
  for (const KernelVariant& v : vs)
    if (v.kernel == k) return v;
  return KernelVariant{packed ? "default.packed" : "default.rows", kernels::active_isa(), packed, 1, INT_MAX, k};
}

}  // namespace

TypePlan default_type_plan(TensorType t) {
  TypePlan tp;
  tp.type = t;
  tp.packed = !packing_disabled() && kernels::packable(t) && kernels::packed_matmul_kernel(t) != nullptr;
  const KernelVariant v = default_variant(t, tp.packed);
  for (int c = 0; c < kColClasses; ++c) tp.kernel[c] = v;
  return tp;
}

int64_t plan_sample_rows(int64_t rows, size_t row_bytes, uint64_t bytes) {
  constexpr int64_t kUnitRows = 2 * kernels::kPackRows;  // a pair of row groups, as the passes split them
  const auto fit = static_cast<int64_t>(bytes / std::max<size_t>(row_bytes, 1)) / kUnitRows * kUnitRows;
  return std::min(rows, std::max(fit, kUnitRows));
}

bool plan_variant_wins(const std::vector<double>& variant, const std::vector<double>& def, double margin) {
  if (variant.empty() || def.empty()) return false;
  if (*std::min_element(variant.begin(), variant.end()) > (1 - margin) * *std::min_element(def.begin(), def.end()))
    return false;
  for (size_t r = 0; r < variant.size() && r < def.size(); ++r)
    if (variant[r] >= def[r]) return false;
  return true;
}

std::vector<size_t> plan_finalists(const std::vector<double>& seconds, const std::vector<bool>& is_default) {
  constexpr size_t kFinalists = 3;
  constexpr double kCut = 1.25;
  const double best = seconds.empty() ? 0 : *std::min_element(seconds.begin(), seconds.end());
  std::vector<size_t> order(seconds.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return seconds[a] < seconds[b]; });
  std::vector<size_t> kept;
  size_t others = 0;
  for (size_t i : order) {
    if (is_default[i]) {
      kept.push_back(i);
    } else if (others < kFinalists && seconds[i] <= kCut * best) {
      kept.push_back(i);
      ++others;
    }
  }
  return kept;
}

void plan_settle_winner(TypePlan& tp, int c, const KernelVariant& winner, double winner_gbps, const TypePlan* prev,
                        double prev_at, double now, double confirm_after) {
  double first = now;  // when the winner first won
  if (prev && prev->packed == tp.packed) {
    if (prev->pending[c].kernel == winner.kernel && prev->pending_since[c] > 0)
      first = prev->pending_since[c];
    else if (prev->kernel[c].kernel == winner.kernel && prev_at > 0)
      first = prev_at;
  }
  if (now - first >= confirm_after) {
    tp.kernel[c] = winner;
    tp.gbps[c] = winner_gbps;
    tp.pending[c] = {};
    tp.pending_gbps[c] = tp.pending_since[c] = 0;
  } else {
    tp.pending[c] = winner;
    tp.pending_gbps[c] = winner_gbps;
    tp.pending_since[c] = first;
    if (tp.gbps[c] > 0 && winner_gbps >= kRunPendingRatio * tp.gbps[c]) {
      tp.kernel[c] = winner;
      tp.gbps[c] = winner_gbps;
    }
  }
}

namespace {
// Sets every matrix's per-class kernels from the plan.
void set_matrix_kernels(Weights& w, const KernelPlan& plan) {
  for (Matrix* m : w.matmul_matrices()) {
    const TypePlan* tp = plan.find(m->type);
    m->kernels = {};
    // A matrix the layout does not fit (row length) keeps the defaults.
    if (!tp || tp->packed != m->packed) continue;
    for (int c = 0; c < kColClasses; ++c) m->kernels[c] = tp->kernel[c].kernel;
  }
}
}  // namespace

void apply_plan(Weights& w, const KernelPlan& plan) {
  std::vector<TensorType> pack_types;
  for (const TypePlan& tp : plan.types)
    if (tp.packed) pack_types.push_back(tp.type);
  w.pack(pack_types, true);
  set_matrix_kernels(w, plan);
  w.release_file_pages();
}

namespace {

ThreadPoolOptions pool_options(int n_threads) {
  ThreadPoolOptions o;
  o.n_threads = n_threads;
  return o;
}

// Times kernel variants on the model's own matrices, rounds interleaved
// (each round runs every candidate once), so a change in the machine's
// load or bandwidth falls on all of them alike.
class Timer {
 public:
  Timer(Weights& w, int n_threads, double budget, Clock::time_point start)
      : pool_(pool_options(n_threads)), budget_(budget), start_(start) {
    int64_t max_cols = 0, max_rows = 0;
    for (Matrix* m : w.matmul_matrices()) max_cols = std::max(max_cols, m->cols), max_rows = std::max(max_rows, m->rows);
    x_stride_ = max_cols;
    out_stride_ = max_rows;
    x_.resize(static_cast<size_t>(max_cols) * kClassCols[kColClasses - 1]);
    out_.resize(static_cast<size_t>(max_rows) * kClassCols[kColClasses - 1]);
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> dist(-1.f, 1.f);
    for (float& v : x_) v = dist(rng);
  }
  int n_threads() const { return pool_.size(); }
  bool over_budget() const { return seconds_since(start_) > budget_; }

  // Each candidate's pass over its own sample (the same matrices in the
  // candidate's layout) in each of `rounds` rounds, or as many as the budget
  // allows (at least one): seconds[candidate][round]. Empty if the budget
  // is spent already.
  std::vector<std::vector<double>> time(const std::vector<std::vector<Matrix>>& samples,
                                        const std::vector<KernelVariant>& cands, int ncols, int rounds) {
    std::vector<std::vector<double>> t(cands.size());
    for (int r = -1; r < rounds; ++r) {  // round -1 warms caches and TLBs
      if (over_budget()) {
        if (r < 0) return {};
        if (r > 0) break;
      }
      for (size_t i = 0; i < cands.size(); ++i) {
        // Warming needs one pass per layout, not per candidate.
        if (r < 0 && i > 0 && cands[i].packed == cands[0].packed) continue;
        const auto t0 = Clock::now();
        for (Matrix v : samples[i]) {
          v.kernels.fill(cands[i].kernel);
          op_.invalidate();
          op_.run(pool_, v, x_.data(), x_stride_, ncols, out_.data(), out_stride_);
        }
        if (r >= 0) t[i].push_back(seconds_since(t0));
      }
    }
    if (t.empty() || t[0].empty()) return {};
    return t;
  }

 private:
  ThreadPool pool_;
  MatmulOp op_;
  double budget_;
  Clock::time_point start_;
  std::vector<float> x_, out_;
  int64_t x_stride_ = 0, out_stride_ = 0;
};

// Each candidate's fastest round: another process or VM can only slow a
// pass down, so the fastest is the least disturbed.
std::vector<double> fastest_rounds(const std::vector<std::vector<double>>& seconds) {
  std::vector<double> out;
  for (const auto& r : seconds) out.push_back(*std::min_element(r.begin(), r.end()));
  return out;
}

struct Measured {
  KernelVariant best;
  double seconds = 0;  // 0: not measured
  double gbps = 0;
  double default_gbps = 0;  // the layout's default's figure (0: not timed)
};

// The row-major view of a matrix (its file rows, also while packed).
Matrix rows_view(const Matrix& m) {
  Matrix v = m;
  if (m.packed) {
    v.data = m.file_data;
    v.packed = false;
    v.group_bytes = 0;
  }
  return v;
}

// Times every candidate of type t for each column class, row-major and
// packed ones in the same rounds, on the type's matrices (those the packed
// layout fits, when it is a candidate), and keeps each layout's best.
void measure_class(Timer& timer, int c, TensorType t, const std::vector<Matrix*>& mats,
                   const std::vector<KernelVariant>& vars, Measured by_rows[kColClasses],
                   Measured by_packed[kColClasses], std::string* note) {
  bool any_packed = false, any_rows = false;
  for (const KernelVariant& v : vars) (v.packed ? any_packed : any_rows) = true;
  {
    std::vector<KernelVariant> cands;
    for (const KernelVariant& v : vars)
      if (covers(v, kClassCols[c])) cands.push_back(v);
    // One candidate is timed only to weigh the layouts against each other.
    if (cands.empty() || (cands.size() == 1 && !(any_packed && any_rows))) return;
    // The type's matrices in both layouts, `limit` bytes of them: the last
    // one (or a single large one, such as an output matrix) cut to its
    // first rows, whole pairs of row groups as the passes split them.
    auto sample_of = [&](uint64_t limit, uint64_t* bytes) {
      std::vector<Matrix> rows, packed;
      *bytes = 0;
      for (const Matrix* m : mats) {
        if (*bytes >= limit) break;
        Matrix cut = *m;
        cut.rows = plan_sample_rows(m->rows, m->row_bytes, limit - *bytes);
        rows.push_back(rows_view(cut));
        if (m->packed) packed.push_back(cut);
        *bytes += static_cast<uint64_t>(m->row_bytes) * static_cast<uint64_t>(cut.rows);
      }
      std::vector<std::vector<Matrix>> samples;
      for (const KernelVariant& v : cands) samples.push_back(v.packed ? packed : rows);
      return samples;
    };
    uint64_t bytes = 0;
    auto is_default = [&](const KernelVariant& v) { return v.kernel == default_variant(t, v.packed).kernel; };
    const auto defaults = static_cast<size_t>(std::count_if(cands.begin(), cands.end(), is_default));
    // More candidates than layouts: the preliminary rounds pick who goes on
    // (plan_finalists), so that slow candidates (another ISA's kernels at
    // many columns) cost two short passes, not the full rounds.
    if (cands.size() > defaults) {
      const auto pre = timer.time(sample_of(kClassSampleBytes[c] / 4, &bytes), cands, kClassCols[c], 2);
      if (!pre.empty()) {
        std::vector<bool> defaults_mask;
        for (const KernelVariant& v : cands) defaults_mask.push_back(is_default(v));
        std::vector<KernelVariant> kept;
        for (size_t i : plan_finalists(fastest_rounds(pre), defaults_mask)) kept.push_back(cands[i]);
        cands = kept;
      }
    }
    const auto sample = sample_of(kClassSampleBytes[c], &bytes);
    const auto rounds = timer.time(sample, cands, kClassCols[c], kRounds);
    if (rounds.empty()) {
      if (note->empty()) *note = "time budget reached: some classes keep the default kernels";
      return;
    }
    const std::vector<double> secs = fastest_rounds(rounds);
    // Each layout's best; a variant displaces the layout's default table
    // only when it is clearly faster, and in every round (plan_variant_wins).
    for (int layout = 0; layout < 2; ++layout) {
      const KernelVariant def = default_variant(t, layout == 1);
      int best = -1, def_i = -1;
      for (size_t i = 0; i < cands.size(); ++i) {
        if (cands[i].packed != (layout == 1)) continue;
        if (cands[i].kernel == def.kernel) def_i = static_cast<int>(i);
        if (best < 0 || secs[i] < secs[static_cast<size_t>(best)]) best = static_cast<int>(i);
      }
      if (best < 0) continue;
      if (def_i >= 0 && !plan_variant_wins(rounds[static_cast<size_t>(best)], rounds[static_cast<size_t>(def_i)], kMargin))
        best = def_i;
      auto gbps_of = [&](int i) {
        const double t = i < 0 ? 0 : secs[static_cast<size_t>(i)];
        return t > 0 ? static_cast<double>(bytes) / t / 1e9 : 0;
      };
      (layout ? by_packed : by_rows)[c] =
          Measured{cands[static_cast<size_t>(best)], secs[static_cast<size_t>(best)], gbps_of(best), gbps_of(def_i)};
    }
  }
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The second measuring of the plan's pending variants that are due: each
// against its baseline, as a planning times them. A variant that wins again
// runs; one that does not is dropped (the baseline stays). Returns whether
// the plan changed; the matrices run the new choice.
bool confirm_pending(Weights& w, KernelPlan& plan, const PlanOptions& o, double now) {
  std::unique_ptr<Timer> timer;  // made on first need
  bool changed = false;
  for (TypePlan& tp : plan.types) {
    for (int c = 0; c < kColClasses; ++c) {
      if (!tp.pending[c].name || now - tp.pending_since[c] < o.confirm_after_seconds) continue;
      if (!timer) timer = std::make_unique<Timer>(w, plan.n_threads, o.budget_seconds, Clock::now());
      std::vector<Matrix*> mats;
      for (Matrix* m : w.matmul_matrices())
        if (m->type == tp.type && m->packed == tp.packed) mats.push_back(m);
      Measured by_rows[kColClasses], by_packed[kColClasses];
      std::string note;
      // Against the layout's baseline, also where the variant runs already.
      const KernelVariant base = default_variant(tp.type, tp.packed);
      measure_class(*timer, c, tp.type, mats, {base, tp.pending[c]}, by_rows, by_packed, &note);
      const Measured& r = (tp.packed ? by_packed : by_rows)[c];
      if (r.seconds <= 0) continue;  // out of budget: still pending
      const bool won = r.best.kernel == tp.pending[c].kernel;
      char buf[256], figures[64];
      if (won)
        std::snprintf(figures, sizeof figures, "runs (%.1f GB/s, the baseline %.1f)", r.gbps, r.default_gbps);
      else
        std::snprintf(figures, sizeof figures, "dropped, not clearly faster again (the baseline %.1f GB/s)", r.gbps);
      std::snprintf(buf, sizeof buf, "%s%s %s: %s %s", plan.confirmed.empty() ? "" : "; ", type_name(tp.type),
                    kernels::col_class_name(static_cast<ColClass>(c)), tp.pending[c].name, figures);
      plan.confirmed += buf;
      tp.kernel[c] = won ? tp.pending[c] : base;
      tp.gbps[c] = r.gbps;
      tp.pending[c] = {};
      tp.pending_gbps[c] = tp.pending_since[c] = 0;
      changed = true;
    }
  }
  if (changed) set_matrix_kernels(w, plan);
  return changed;
}

void cache_plan(const std::string& path, const PlanKey& key, KernelPlan& plan,
                const std::function<void(int, const std::string&)>& log) {
  if (path.empty()) {
    plan.note = "not cached: no cache directory (set BRISK_CACHE_DIR or HOME)";
    log(1, "kernel plan " + plan.note);
    return;
  }
  try {
    write_cached_plan(path, key, plan);
    plan.cache_file = path;
  } catch (const Error& e) {
    plan.note = std::string("not cached: ") + e.what();
    log(1, "kernel plan " + plan.note);
  }
}

}  // namespace

KernelPlan plan_kernels(Weights& w, const PlanOptions& o) {
  const auto start = Clock::now();
  const int n_threads = o.n_threads > 0 ? o.n_threads : sys::default_thread_count(physical_core_count());
  auto log = [&](int level, const std::string& msg) {
    if (o.log) o.log(level, msg);
  };
  // The types by bytes, most first: the budget goes to what decode reads most.
  std::vector<std::pair<uint64_t, TensorType>> by_bytes;
  for (Matrix* m : w.matmul_matrices()) {
    auto it = std::find_if(by_bytes.begin(), by_bytes.end(), [m](const auto& p) { return p.second == m->type; });
    if (it == by_bytes.end()) it = by_bytes.insert(by_bytes.end(), {0, m->type});
    it->first += static_cast<uint64_t>(m->row_bytes) * static_cast<uint64_t>(m->rows);
  }
  std::stable_sort(by_bytes.begin(), by_bytes.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<TensorType> types;
  for (const auto& p : by_bytes) types.push_back(p.second);

  KernelPlan plan;
  if (o.mode == PlanMode::fixed) {
    plan.source = "fixed";
    for (TensorType t : types) plan.types.push_back(default_type_plan(t));
    plan.pack_seconds = timed_apply(w, plan);
    return plan;
  }

  const PlanKey key = make_plan_key(w, n_threads);
  const std::string dir = plan_cache_dir(o.cache_dir);
  const std::string path = dir.empty() ? std::string() : plan_cache_path(dir, key);
  const double now = unix_now();
  // The cached plan: used as it is in automatic mode; otherwise its
  // choices count as an earlier measuring's (plan_settle_winner).
  std::optional<KernelPlan> prev;
  if (!path.empty()) {
    std::string why;
    KernelPlan cached;
    if (read_cached_plan(path, key, &cached, &why)) {
      prev = std::move(cached);
    } else if (!why.empty() && o.mode == PlanMode::automatic) {
      log(1, "kernel plan cache '" + path + "' ignored (" + why + "); measuring again");
    }
  }
  if (o.mode == PlanMode::automatic && prev) {
    plan = std::move(*prev);
    plan.source = "cached";
    plan.cache_file = path;
    plan.confirm_after = o.confirm_after_seconds;
    const double read_seconds = seconds_since(start);
    plan.pack_seconds = timed_apply(w, plan);
    const auto confirm_start = Clock::now();
    if (confirm_pending(w, plan, o, now)) {
      cache_plan(path, key, plan, log);
      log(2, "kernel plan: confirmed at this load: " + plan.confirmed);
    }
    plan.seconds = read_seconds + seconds_since(confirm_start);
    return plan;
  }

  // Every type with packed candidates is packed first (which also brings
  // the file's pages in), keeping the file pages until the choice is made;
  // then row-major candidates are timed on the file rows and packed ones on
  // the copies, in the same rounds.
  struct Work {
    TensorType t;
    std::vector<KernelVariant> vars;
    bool has_packed = false, has_rows = false;
    Measured by_rows[kColClasses], by_packed[kColClasses];
  };
  std::vector<Work> work;
  std::vector<TensorType> to_pack;
  for (TensorType t : types) {
    Work wk{t, candidates(t), false, false, {}, {}};
    for (const KernelVariant& v : wk.vars) (v.packed ? wk.has_packed : wk.has_rows) = true;
    if (wk.has_packed) to_pack.push_back(t);
    work.push_back(std::move(wk));
  }
  const auto pack_start = Clock::now();
  w.pack(to_pack, false);
  plan.pack_seconds = seconds_since(pack_start);
  // The budget bounds the measuring; packing is part of any load.
  Timer timer(w, n_threads, o.budget_seconds, Clock::now());
  // Decode first for every type, then the wider classes: if the budget runs
  // out, what is left at the defaults is what matters least.
  for (int c = 0; c < kColClasses; ++c) {
    for (Work& wk : work) {
      std::vector<Matrix*> mats;
      for (Matrix* m : w.matmul_matrices())
        if (m->type == wk.t && (!wk.has_packed || m->packed)) mats.push_back(m);
      measure_class(timer, c, wk.t, mats, wk.vars, wk.by_rows, wk.by_packed, &plan.note);
    }
  }

  for (Work& wk : work) {
    TypePlan tp = default_type_plan(wk.t);
    if (wk.has_packed && wk.has_rows) {
      // Each layout's time relative to the better one, weighed by class.
      double score[2] = {0, 0}, weight = 0;
      for (int c = 0; c < kColClasses; ++c) {
        const double r = wk.by_rows[c].seconds, p = wk.by_packed[c].seconds;
        if (r <= 0 || p <= 0) continue;
        score[0] += kClassWeight[c] * r / std::min(r, p);
        score[1] += kClassWeight[c] * p / std::min(r, p);
        weight += kClassWeight[c];
      }
      if (weight > 0 && std::abs(score[0] - score[1]) > kLayoutMargin * weight) tp.packed = score[1] < score[0];
    } else {
      tp.packed = wk.has_packed;
    }
    const KernelVariant def = default_variant(wk.t, tp.packed);
    const Measured* m = tp.packed ? wk.by_packed : wk.by_rows;
    const TypePlan* prev_tp = prev ? prev->find(wk.t) : nullptr;
    for (int c = 0; c < kColClasses; ++c) {
      tp.kernel[c] = m[c].seconds > 0 ? m[c].best : def;
      tp.gbps[c] = m[c].gbps;
      // A variant that beat the timed default waits for a second measuring.
      if (m[c].seconds > 0 && m[c].best.kernel != def.kernel && m[c].default_gbps > 0) {
        tp.kernel[c] = def;
        tp.gbps[c] = m[c].default_gbps;
        plan_settle_winner(tp, c, m[c].best, m[c].gbps, prev_tp, prev ? prev->measured_at : 0, now,
                           o.confirm_after_seconds);
      }
    }
    if (!tp.packed && wk.has_packed) w.unpack(wk.t);
    plan.types.push_back(tp);
  }
  plan.source = "measured";
  plan.measured_at = now;
  plan.confirm_after = o.confirm_after_seconds;
  plan.n_threads = timer.n_threads();
  plan.pack_seconds += timed_apply(w, plan);
  plan.seconds = seconds_since(start) - plan.pack_seconds;
  // A plan cut short by the budget is cached too: measuring again at every
  // load would cost the budget every time; `brisk tune` measures again.
  if (!plan.note.empty()) log(1, "kernel plan " + plan.note);
  cache_plan(path, key, plan, log);
  log(2, plan.describe());
  return plan;
}

}  // namespace brisk
