// SPDX-License-Identifier: MIT
#include "calibration/calibrated.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "calibration/calibrate.h"
#include "calibration/report.h"
#include "core/error.h"
#include "quantize/recipe.h"

namespace brisk::calib {

namespace {

// Re-reads the calibration data and checks it is byte for byte what the
// statistics were made from; returns nothing (and says why) otherwise.
// Only files the user names are read: the paths recorded in a statistics
// file are someone else's words, so they serve for comparison only.
std::optional<std::vector<DataSource>> reload_data(const StatsInfo& info, const std::vector<std::string>& paths,
                                                   std::vector<std::string>& warnings) {
  if (info.sources.empty()) return std::nullopt;
  if (paths.empty()) {
    warnings.push_back("calibration text not read (name the calibration data files to measure KL and to evaluate "
                       "on the held-out text)");
    return std::nullopt;
  }
  try {
    std::vector<DataSource> now = load_data(paths, {info.jsonl_field, info.holdout});
    if (now.size() != info.sources.size()) throw Error(BRISK_ERR_CHECKSUM, "the data files changed");
    for (size_t i = 0; i < now.size(); ++i)
      if (!info.sources[i].hash.empty() && now[i].hash != info.sources[i].hash)
        throw Error(BRISK_ERR_CHECKSUM, "'" + now[i].path + "' changed since calibration (hash " + now[i].hash +
                                            ", recorded " + info.sources[i].hash + ")");
    return now;
  } catch (const Error& e) {
    warnings.push_back(std::string("calibration text unavailable: ") + e.what());
    return std::nullopt;
  }
}

void add_recipe_metadata(gguf::Writer& w, const CalibratedOptions& o, const Stats& st, const std::string& stats_hash,
                         const std::vector<quantize::TensorPlan>& plan, const std::vector<TensorSensitivity>& sens,
                         const std::string& method, uint64_t target, double predicted) {
  std::vector<std::string> names, types, paths, hashes;
  std::vector<float> damage;
  for (const auto& t : plan) {
    if (!t.is_matrix) continue;
    names.push_back(t.name);
    types.push_back(type_name(t.type));
    float d = -1;
    for (const auto& s : sens)
      if (s.name == t.name) d = static_cast<float>(s.candidates[s.chosen].damage);
    damage.push_back(d);
  }
  for (const DataSource& d : st.info.sources) {
    paths.push_back(d.path);
    hashes.push_back(d.hash);
  }
  w.add_string("brisk.recipe.method", method);
  w.add_string("brisk.recipe.preset", o.quant.preset);
  w.add_u64("brisk.recipe.target_bytes", target);
  w.add_f32("brisk.recipe.predicted_kld", static_cast<float>(predicted));
  w.add_strings("brisk.recipe.tensors", names);
  w.add_strings("brisk.recipe.types", types);
  w.add_f32s("brisk.recipe.damage", damage);
  w.add_string("brisk.calibration.file", o.stats_path);
  w.add_string("brisk.calibration.hash", stats_hash);
  w.add_u64("brisk.calibration.tokens", st.info.tokens_done);
  w.add_strings("brisk.calibration.data.paths", paths);
  w.add_strings("brisk.calibration.data.hashes", hashes);
  // The keys llama-quantize writes for an imatrix, so its tools recognise ours.
  w.add_string("quantize.imatrix.file", o.stats_path);
  w.add_string("quantize.imatrix.dataset", paths.empty() ? "" : paths[0]);
  w.add_i32("quantize.imatrix.entries_count", static_cast<int32_t>(st.matrices.size()));
  w.add_i32("quantize.imatrix.chunks_count", static_cast<int32_t>(st.info.chunks_done));
}

}  // namespace

std::string report_path(const std::string& out_path, const char* ext) {
  std::string base = out_path;
  if (base.size() > 5 && base.compare(base.size() - 5, 5, ".gguf") == 0) base.resize(base.size() - 5);
  return base + ".report." + ext;
}

CalibratedResult quantize_calibrated(const std::string& in_path, const std::string& out_path,
                                     const CalibratedOptions& o) {
  CalibratedResult res;
  auto warn = [&](const std::string& m) {
    res.warnings.push_back(m);
    if (o.warn) o.warn(m);
  };
  Stats st = read_stats(o.stats_path);
  if (!st.info.complete)
    fail(BRISK_ERR_INVALID_ARGUMENT, "'" + o.stats_path + "' is a partial calibration (" +
                                         std::to_string(st.info.chunks_done) + " of " + std::to_string(st.info.chunks_total) +
                                         " chunks): finish it with brisk calibrate --resume");
  const std::string stats_hash = xxh3_file(o.stats_path);
  ModelOpenOptions load = reproducible_load();
  load.map = o.quant.input;
  auto source = Model::open(in_path, load);
  // Shapes are checked before any quantizer reads an importance vector.
  fit_stats_to_model(st, source->file(), o.stats_path);
  const quantize::ImportanceMap importance = st.importance();
  if (!st.info.model_hash.empty() && st.info.model_hash != model_hash(in_path, o.quant.input))
    warn("the calibration was made with another model file (" + st.info.model_path +
         "); fine if it is the same weights in another precision");
  const quantize::Preset& preset = quantize::find_preset(o.quant.preset);
  std::vector<std::string> data_warnings;
  const auto data = reload_data(st.info, o.data_paths, data_warnings);
  for (const auto& m : data_warnings) warn(m);

  quantize::QuantizeOptions q = o.quant;
  q.importance = &importance;
  std::vector<quantize::TensorPlan> plan = quantize::plan_for(source->file(), q);
  std::string method = "preset";
  uint64_t target = o.target_size;
  if (o.target_size > 0 || o.target_bpw > 0) {
    SensitivityOptions so;
    so.n_ctx = st.info.n_ctx > 0 ? st.info.n_ctx : 256;
    so.n_threads = q.n_threads;
    so.measure_kl = o.measure_kl && data.has_value();
    if (o.measure_kl && !data) warn("sensitivity falls back to importance-weighted error (no calibration text)");
    if (so.measure_kl) {
      std::vector<std::string> texts;
      for (const DataSource& d : *data) texts.push_back(d.calib_text);
      so.sample_chunks = make_chunks(*source, texts, so.n_ctx, std::max<uint64_t>(o.sensitivity_tokens, so.n_ctx)).chunks;
    }
    so.progress = [&](uint64_t d, uint64_t t, const std::string& what) {
      return !o.progress || o.progress("sensitivity", d, t, what);
    };
    res.sensitivity = measure_sensitivity(*source, plan, importance, so);
    method = so.measure_kl ? "kl-scaled-error" : "weighted-error";
    // Budget for the matrices: the target minus everything else in the file
    // (header with a provisional recipe, vectors, alignment padding).
    uint64_t fixed = 0, n_elements = 0, vec_bytes = 0;
    std::vector<quantize::TensorPlan> cheapest = plan;
    for (auto& t : cheapest) {
      n_elements += static_cast<uint64_t>(t.n_elements());
      if (!t.is_matrix) {
        vec_bytes += t.bytes();
        continue;
      }
      for (const auto& s : res.sensitivity)
        if (s.name == t.name) t.type = s.candidates.front().type;
    }
    uint64_t min_matrix = 0;
    for (const auto& s : res.sensitivity) min_matrix += s.candidates.front().bytes;
    auto extra = [&](gguf::Writer& w) {
      add_recipe_metadata(w, o, st, stats_hash, cheapest, res.sensitivity, method, target, 0);
    };
    const uint64_t slack = 64 * cheapest.size();
    fixed = quantize::predict_file_size(source->file(), preset, cheapest, extra) - min_matrix + slack;
    if (o.target_bpw > 0) target = static_cast<uint64_t>(o.target_bpw * n_elements / 8.0) - vec_bytes + fixed;
    if (target <= fixed) fail(BRISK_ERR_INVALID_ARGUMENT, "the target size is smaller than the file's fixed part");
    res.predicted_kld = allocate(res.sensitivity, target - fixed);
    for (const auto& s : res.sensitivity) q.plan.exact_types[s.name] = s.candidates[s.chosen].type;
    plan = quantize::plan_for(source->file(), q);
  }
  q.extra_metadata = [&](gguf::Writer& w) {
    add_recipe_metadata(w, o, st, stats_hash, plan, res.sensitivity, method, target, res.predicted_kld);
  };
  res.quant = quantize::quantize_model(in_path, out_path, q);
  if (target > 0 && res.quant.file_bytes > target)
    fail(BRISK_ERR_INTERNAL, "the output (" + std::to_string(res.quant.file_bytes) + " bytes) exceeds the target");
  if (!o.report) return res;

  // Quality on text the statistics never saw.
  std::string eval_text;
  if (!o.eval_file.empty()) {
    const std::string h = xxh3_file(o.eval_file);
    bool is_calib = false;
    for (const DataSource& d : st.info.sources) is_calib |= d.hash == h;
    if (is_calib && !o.eval_on_calib)
      fail(BRISK_ERR_INVALID_ARGUMENT, "'" + o.eval_file + "' is calibration data: evaluating on it would flatter the "
                                       "result (pass eval_on_calib / --eval-on-calib to do it anyway)");
    std::ifstream in(o.eval_file, std::ios::binary);
    eval_text.assign(std::istreambuf_iterator<char>(in), {});
    res.eval_text_desc = o.eval_file + " (" + h + ")";
    if (is_calib) {
      warn("WARNING: EVALUATING ON THE CALIBRATION TEXT: quality figures are optimistic");
      res.eval_text_desc += " [CALIBRATION TEXT]";
    }
  } else if (data) {
    for (const DataSource& d : *data) eval_text += o.eval_on_calib ? d.calib_text : d.heldout_text;
    res.eval_text_desc = o.eval_on_calib ? "the calibration part of the data [CALIBRATION TEXT]"
                                         : "the held-out tail of each data file (excluded from the statistics)";
    if (o.eval_on_calib) warn("WARNING: EVALUATING ON THE CALIBRATION TEXT: quality figures are optimistic");
  }
  if (eval_text.empty()) {
    warn("no held-out text to evaluate on (calibrated with holdout 0?): the report has no quality figures");
  } else {
    auto quantized = Model::open(out_path, reproducible_load());
    PplOptions po;
    po.n_ctx = st.info.n_ctx > 0 ? st.info.n_ctx : 256;
    po.max_chunks = o.eval_max_chunks;
    po.n_threads = q.n_threads;
    po.progress = [&](uint64_t d, uint64_t t) { return !o.progress || o.progress("ppl", d, t, ""); };
    try {
      res.eval = perplexity(*quantized, source.get(), eval_text, po);
    } catch (const Error& e) {
      if (e.code() == BRISK_ERR_CANCELLED) throw;
      warn(std::string("evaluation skipped: ") + e.what());
    }
  }
  res.report_md = report_path(out_path, "md");
  res.report_json = report_path(out_path, "json");
  write_report(res, in_path, out_path, o, st, stats_hash);
  return res;
}

}  // namespace brisk::calib
