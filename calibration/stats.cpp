// SPDX-License-Identifier: MIT
#include "calibration/stats.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/error.h"
#include "gguf/gguf.h"
#include "gguf/writer.h"

namespace brisk::calib {

namespace {
const std::string kP = "brisk.calibration.";
const char* kSum2 = ".in_sum2";
const char* kCounts = ".counts";

bool ends_with(const std::string& s, const std::string& suf) {
  return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}
// A decimal count written by write_stats; anything else is a corrupt file.
uint64_t count_field(const gguf::File& f, const std::string& key, const std::string& s) {
  uint64_t v = 0;
  if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string::npos)
    f.fail_format("'" + key + "' holds '" + s.substr(0, 40) + "', not a count");
  for (char c : s) v = v * 10 + static_cast<uint64_t>(c - '0');
  return v;
}

float read_f32(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, sizeof v);  // the data offset need not be 4-aligned
  return v;
}

std::vector<std::string> strings(const gguf::File& f, const std::string& key) {
  std::vector<std::string> out;
  if (const gguf::Value* v = f.opt_array(key, gguf::ValueType::STRING))
    for (const gguf::Value& it : v->items) out.emplace_back(it.str);
  return out;
}
}  // namespace

quantize::ImportanceMap Stats::importance() const {
  quantize::ImportanceMap m;
  for (const auto& [name, s] : matrices) {
    if (s.count == 0) continue;
    std::vector<float> v(s.sum2.size());
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(s.sum2[i] / s.count);
    m[name] = std::move(v);
  }
  return m;
}

void StatsCollector::observe(const Matrix& w, const float* x, int64_t stride, int ncols) {
  MatrixStats& s = stats_.matrices[w.name];
  if (s.sum2.empty()) s.sum2.assign(static_cast<size_t>(w.cols), 0.0);
  // Resumed statistics are fitted to the model first (fit_stats_to_model).
  if (s.sum2.size() != static_cast<size_t>(w.cols))
    fail(BRISK_ERR_INTERNAL, "statistics for '" + w.name + "' have " + std::to_string(s.sum2.size()) +
                                 " columns, the matrix " + std::to_string(w.cols));
  double* acc = s.sum2.data();
  for (int c = 0; c < ncols; ++c) {
    const float* col = x + c * stride;
    for (int64_t j = 0; j < w.cols; ++j) acc[j] += static_cast<double>(col[j]) * col[j];
  }
  s.count += static_cast<uint64_t>(ncols);
}

void write_stats(const std::string& path, const Stats& st) {
  const StatsInfo& in = st.info;
  gguf::Writer w;
  w.add_string("general.type", "imatrix");
  std::vector<std::string> paths, hashes, bytes, cal, held, kinds;
  for (const DataSource& d : in.sources) {
    paths.push_back(d.path);
    hashes.push_back(d.hash);
    bytes.push_back(std::to_string(d.bytes));
    cal.push_back(std::to_string(d.calib_bytes));
    held.push_back(std::to_string(d.heldout_bytes));
    kinds.push_back(d.jsonl ? "jsonl" : "text");
  }
  w.add_strings("imatrix.datasets", paths);
  w.add_u32("imatrix.chunk_count", in.chunks_done);
  w.add_u32("imatrix.chunk_size", static_cast<uint32_t>(in.n_ctx));
  w.add_u32(kP + "version", kStatsVersion);
  w.add_bool(kP + "complete", in.complete);
  w.add_string(kP + "model", in.model_path);
  w.add_string(kP + "model_hash", in.model_hash);
  w.add_u32(kP + "chunks_total", in.chunks_total);
  w.add_u64(kP + "tokens", in.tokens_done);
  w.add_u64(kP + "tokens_available", in.tokens_available);
  w.add_u64(kP + "token_budget", in.token_budget);
  w.add_f32(kP + "holdout", static_cast<float>(in.holdout));
  w.add_string(kP + "jsonl_field", in.jsonl_field);
  w.add_strings(kP + "data.paths", paths);
  w.add_strings(kP + "data.hashes", hashes);
  w.add_strings(kP + "data.bytes", bytes);
  w.add_strings(kP + "data.kinds", kinds);
  w.add_strings(kP + "data.calib_units", cal);
  w.add_strings(kP + "data.heldout_units", held);
  std::vector<const std::pair<const std::string, MatrixStats>*> order;
  for (const auto& e : st.matrices) {
    w.add_tensor(e.first + kSum2, TensorType::F32, {static_cast<int64_t>(e.second.sum2.size())});
    w.add_tensor(e.first + kCounts, TensorType::F32, {1});
    order.push_back(&e);
  }
  std::vector<float> buf;
  w.write(path, [&](size_t i, const gguf::Writer::Sink& sink) {
    const MatrixStats& s = order[i / 2]->second;
    if (i % 2 == 0) {
      buf.assign(s.sum2.begin(), s.sum2.end());
    } else {
      buf.assign(1, static_cast<float>(s.count));
    }
    sink(buf.data(), buf.size() * sizeof(float));
  });
}

Stats read_stats(const std::string& path) {
  const gguf::File f(path);
  const auto type = f.opt_string("general.type");
  if (!type || *type != "imatrix")
    fail(BRISK_ERR_BAD_FORMAT, "'" + path + "' is not a calibration file (general.type is not 'imatrix')");
  Stats st;
  StatsInfo& in = st.info;
  in.version = static_cast<uint32_t>(f.opt_uint(kP + "version").value_or(0));
  if (in.version > kStatsVersion)
    fail(BRISK_ERR_UNSUPPORTED, "'" + path + "' has calibration format version " + std::to_string(in.version) +
                                    "; this brisk reads up to " + std::to_string(kStatsVersion));
  in.complete = f.opt_bool(kP + "complete").value_or(true);
  in.n_ctx = static_cast<int>(f.opt_uint("imatrix.chunk_size").value_or(0));
  in.chunks_done = static_cast<uint32_t>(f.opt_uint("imatrix.chunk_count").value_or(0));
  in.chunks_total = static_cast<uint32_t>(f.opt_uint(kP + "chunks_total").value_or(in.chunks_done));
  in.tokens_done = f.opt_uint(kP + "tokens").value_or(static_cast<uint64_t>(in.chunks_done) * in.n_ctx);
  in.tokens_available = f.opt_uint(kP + "tokens_available").value_or(0);
  in.token_budget = f.opt_uint(kP + "token_budget").value_or(0);
  in.holdout = f.opt_float(kP + "holdout").value_or(0);
  in.jsonl_field = f.opt_string(kP + "jsonl_field").value_or("text");
  in.model_path = f.opt_string(kP + "model").value_or("");
  in.model_hash = f.opt_string(kP + "model_hash").value_or("");
  const auto paths = in.version ? strings(f, kP + "data.paths") : strings(f, "imatrix.datasets");
  const auto hashes = strings(f, kP + "data.hashes"), bytes = strings(f, kP + "data.bytes"),
             kinds = strings(f, kP + "data.kinds"), cal = strings(f, kP + "data.calib_units"),
             held = strings(f, kP + "data.heldout_units");
  // Paths are recorded for the report and for checking hashes; they are never
  // opened unless the user names them again (see CalibratedOptions::data_paths).
  for (size_t i = 0; i < paths.size(); ++i) {
    DataSource d;
    d.path = paths[i];
    if (i < hashes.size()) d.hash = hashes[i];
    if (i < bytes.size()) d.bytes = count_field(f, kP + "data.bytes", bytes[i]);
    if (i < kinds.size()) d.jsonl = kinds[i] == "jsonl";
    if (i < cal.size()) d.calib_bytes = count_field(f, kP + "data.calib_units", cal[i]);
    if (i < held.size()) d.heldout_bytes = count_field(f, kP + "data.heldout_units", held[i]);
    in.sources.push_back(std::move(d));
  }
  if (!(in.holdout >= 0 && in.holdout < 1)) f.fail_format("holdout " + std::to_string(in.holdout) + " is outside [0, 1)");
  if (in.n_ctx < 0 || in.n_ctx > (1 << 20)) f.fail_format("imatrix.chunk_size is out of range");
  for (const gguf::TensorInfo& t : f.tensors()) {
    if (!ends_with(t.name, kSum2)) continue;
    const std::string name = t.name.substr(0, t.name.size() - std::string(kSum2).size());
    const gguf::TensorInfo* c = f.find_tensor(name + kCounts);
    if (t.type != TensorType::F32 || !c || c->type != TensorType::F32 || c->n_elements() < 1)
      fail(BRISK_ERR_BAD_FORMAT, "'" + path + "': entry '" + name + "' is malformed");
    // The count converts to an integer only if it is one (NaN or 1e30 would be UB).
    const float count = read_f32(c->data);
    if (!(count >= 0 && count < 1e15f))
      fail(BRISK_ERR_BAD_FORMAT, "'" + path + "': entry '" + name + "' has an invalid count");
    // llama.cpp stores one row per expert; brisk models have one.
    MatrixStats& s = st.matrices[name];
    s.sum2.resize(static_cast<size_t>(t.ne[0]));
    for (int64_t j = 0; j < t.ne[0]; ++j) {
      const float v = read_f32(t.data + 4 * j);
      if (!(v >= 0) || !std::isfinite(v))
        fail(BRISK_ERR_BAD_FORMAT, "'" + path + "': entry '" + name + "' has a negative or non-finite sum at column " +
                                       std::to_string(j));
      s.sum2[static_cast<size_t>(j)] = v;
    }
    s.count = static_cast<uint64_t>(count);
  }
  return st;
}

void fit_stats_to_model(Stats& st, const gguf::File& model, const std::string& stats_path) {
  for (auto it = st.matrices.begin(); it != st.matrices.end();) {
    const gguf::TensorInfo* t = model.find_tensor(it->first);
    if (!t || t->n_dims < 2) {
      it = st.matrices.erase(it);
      continue;
    }
    if (it->second.sum2.size() != static_cast<uint64_t>(t->ne[0]))
      fail(BRISK_ERR_INVALID_ARGUMENT, "'" + stats_path + "' has " + std::to_string(it->second.sum2.size()) +
                                           " columns for '" + it->first + "', the model's tensor has " +
                                           std::to_string(t->ne[0]) + " (made for another model?)");
    ++it;
  }
}

}  // namespace brisk::calib
