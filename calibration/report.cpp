// SPDX-License-Identifier: MIT
#include "calibration/report.h"

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unistd.h>

#include "core/atomic_file.h"
#include "core/error.h"

namespace brisk::calib {

void write_text_atomic(const std::string& path, const std::string& text) { write_file_atomic(path, text); }

void write_report(const CalibratedResult& res, const std::string& in_path, const std::string& out_path,
                  const CalibratedOptions& o, const Stats& st, const std::string& stats_hash) {
  using nlohmann::json;
  json j;
  j["input"] = in_path;
  j["output"] = out_path;
  j["preset"] = o.quant.preset;
  j["calibration"] = {{"file", o.stats_path},
                      {"hash", stats_hash},
                      {"ctx", st.info.n_ctx},
                      {"chunks", st.info.chunks_done},
                      {"tokens", st.info.tokens_done},
                      {"tokens_available", st.info.tokens_available},
                      {"token_budget", st.info.token_budget},
                      {"holdout", st.info.holdout}};
  json data = json::array();
  for (const DataSource& d : st.info.sources)
    data.push_back({{"path", d.path}, {"hash", d.hash}, {"bytes", d.bytes}, {"kind", d.jsonl ? "jsonl" : "text"},
                    {"calib_units", d.calib_bytes}, {"heldout_units", d.heldout_bytes}});
  j["data"] = data;
  json tensors = json::array();
  for (const auto& t : res.quant.tensors) {
    json e = {{"name", t.name}, {"type", type_name(t.type)}, {"bytes", t.bytes()}, {"why", t.why}};
    for (const auto& s : res.sensitivity) {
      if (s.name != t.name) continue;
      e["predicted_kld"] = s.candidates[s.chosen].damage;
      e["measured_kld_at_cheapest"] = s.measured_kld;
      json cands = json::array();
      for (const auto& c : s.candidates)
        cands.push_back({{"type", type_name(c.type)}, {"bytes", c.bytes}, {"weighted_error", c.error},
                         {"predicted_kld", c.damage}});
      e["candidates"] = cands;
    }
    tensors.push_back(e);
  }
  j["recipe"] = tensors;
  j["size"] = {{"file_bytes", res.quant.file_bytes},
               {"tensor_bytes", res.quant.tensor_bytes},
               {"bits_per_weight", res.quant.bpw()},
               {"target_size", o.target_size},
               {"target_bpw", o.target_bpw}};
  j["predicted_kld"] = res.predicted_kld;
  j["evaluation_text"] = res.eval_text_desc;
  j["evaluated_on_calibration_text"] = res.eval_text_desc.find("[CALIBRATION TEXT]") != std::string::npos;
  if (res.eval) {
    const PplResult& r = *res.eval;
    j["quality"] = {{"chunks", r.n_chunks},
                    {"scored_tokens", r.n_scored},
                    {"ppl", r.ppl.value},
                    {"ppl_error", r.ppl.error},
                    {"source_ppl", r.base_ppl.value},
                    {"kld_mean", r.kld.value},
                    {"kld_error", r.kld.error},
                    {"kld_median", r.kld_median},
                    {"kld_p99", r.kld_p99},
                    {"kld_max", r.kld_max},
                    {"same_top_pct", r.same_top_pct.value},
                    {"delta_ppl", r.delta_ppl.value},
                    {"delta_ppl_error", r.delta_ppl.error}};
  }
  j["warnings"] = res.warnings;
  write_text_atomic(res.report_json, j.dump(1) + "\n");

  std::ostringstream md;
  char buf[512];
  md << "# Calibration report: " << out_path << "\n\n";
  for (const auto& w : res.warnings) md << "> **" << w << "**\n\n";
  md << "- source model: `" << in_path << "`\n- preset: `" << o.quant.preset << "`\n";
  md << "- statistics: `" << o.stats_path << "` (" << stats_hash << "), " << st.info.tokens_done << " tokens in "
     << st.info.chunks_done << " chunks of " << st.info.n_ctx << " (of " << st.info.tokens_available
     << " available), held-out share " << st.info.holdout << "\n\n";
  md << "## Data\n\n| file | hash | bytes | calibration part | held-out part |\n|---|---|---:|---:|---:|\n";
  for (const DataSource& d : st.info.sources)
    md << "| `" << d.path << "` | " << d.hash << " | " << d.bytes << " | " << d.calib_bytes << (d.jsonl ? " records" : " bytes")
       << " | " << d.heldout_bytes << (d.jsonl ? " records" : " bytes") << " |\n";
  std::snprintf(buf, sizeof buf, "\n## Size\n\n%llu bytes (%.2f MiB), %.3f bits per weight",
                static_cast<unsigned long long>(res.quant.file_bytes), res.quant.file_bytes / 1048576.0, res.quant.bpw());
  md << buf;
  if (o.target_size) md << "; target " << o.target_size << " bytes";
  if (o.target_bpw > 0) md << "; target " << o.target_bpw << " bpw";
  std::snprintf(buf, sizeof buf, "; predicted mean KL %.6f\n", res.predicted_kld);
  md << buf;
  md << "\n## Quality (" << (res.eval_text_desc.empty() ? "not measured" : res.eval_text_desc) << ")\n\n";
  if (res.eval) {
    const PplResult& r = *res.eval;
    std::snprintf(buf, sizeof buf,
                  "| figure | value |\n|---|---:|\n| chunks x ctx | %d x %d (%llu scored) |\n| PPL | %.4f +/- %.4f |\n"
                  "| source PPL | %.4f |\n| PPL - source PPL | %.4f +/- %.4f |\n| mean KL | %.6f +/- %.6f |\n"
                  "| median / 99%% / max KL | %.6f / %.6f / %.4f |\n| same top token | %.2f %% |\n",
                  r.n_chunks, r.n_ctx, static_cast<unsigned long long>(r.n_scored), r.ppl.value, r.ppl.error,
                  r.base_ppl.value, r.delta_ppl.value, r.delta_ppl.error, r.kld.value, r.kld.error, r.kld_median,
                  r.kld_p99, r.kld_max, r.same_top_pct.value);
    md << buf;
  }
  md << "\n## Recipe\n\n| tensor | type | bytes | predicted KL | measured KL (cheapest) | why |\n|---|---|---:|---:|---:|---|\n";
  for (const auto& t : res.quant.tensors) {
    if (!t.is_matrix) continue;
    double pk = -1, mk = -1;
    for (const auto& s : res.sensitivity)
      if (s.name == t.name) pk = s.candidates[s.chosen].damage, mk = s.measured_kld;
    std::snprintf(buf, sizeof buf, "| %s | %s | %llu | %s | %s | %s |\n", t.name.c_str(), type_name(t.type),
                  static_cast<unsigned long long>(t.bytes()), pk >= 0 ? std::to_string(pk).c_str() : "-",
                  mk >= 0 ? std::to_string(mk).c_str() : "-", t.why.c_str());
    md << buf;
  }
  write_text_atomic(res.report_md, md.str());
}

}  // namespace brisk::calib
