// SPDX-License-Identifier: MIT
#include "calibration/calibrate.h"

#include <chrono>
#include <filesystem>

#include "calibration/eval.h"
#include "core/error.h"
#include "core/mapped_file.h"

namespace brisk::calib {

namespace {

double now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// A resumed run must continue exactly the run that was stopped.
void check_resumable(const StatsInfo& old, const StatsInfo& now, const std::string& path) {
  auto mismatch = [&](const std::string& what) {
    fail(BRISK_ERR_INVALID_ARGUMENT, "cannot resume '" + path + "': " + what +
                                         " differs from the stopped run (start afresh without --resume)");
  };
  if (old.model_hash != now.model_hash) mismatch("the model");
  if (old.n_ctx != now.n_ctx) mismatch("the context length");
  if (old.token_budget != now.token_budget) mismatch("the token budget");
  if (old.chunks_total != now.chunks_total) mismatch("the number of chunks");
  if (old.sources.size() != now.sources.size()) mismatch("the list of data files");
  for (size_t i = 0; i < old.sources.size(); ++i)
    if (old.sources[i].hash != now.sources[i].hash || old.sources[i].calib_bytes != now.sources[i].calib_bytes)
      mismatch("data file '" + now.sources[i].path + "'");
}

}  // namespace

std::string model_hash(const std::string& model_path, const MapOptions& how) {
  MapOptions read = how;
  read.lock = false;
  MappedFile m(model_path, read);
  return xxh3_hex(m.data(), m.size());
}

StatsInfo calibrate(const std::string& model_path, const std::string& out_path, const CalibrateOptions& o) {
  if (o.data.empty()) fail(BRISK_ERR_INVALID_ARGUMENT, "no calibration data given");
  ModelOpenOptions load = reproducible_load();
  load.map = o.input;
  auto model = Model::open(model_path, load);
  const int train = model->config().n_ctx_train;
  const int n_ctx = o.n_ctx > 0 ? o.n_ctx : std::min(train > 0 ? train : 512, 512);

  Stats st;
  StatsInfo& info = st.info;
  info.version = kStatsVersion;
  info.model_path = model_path;
  info.model_hash = model_hash(model_path, o.input);
  info.n_ctx = n_ctx;
  info.token_budget = o.max_tokens;
  info.holdout = o.data_options.holdout;
  info.jsonl_field = o.data_options.jsonl_field;
  info.sources = load_data(o.data, o.data_options);
  std::vector<std::string> texts;
  for (DataSource& d : info.sources) {
    texts.push_back(d.calib_text);
    d.calib_text.clear();  // only the description is kept and written
    d.heldout_text.clear();
  }
  const Chunks chunks = make_chunks(*model, texts, n_ctx, o.max_tokens);
  if (chunks.chunks.empty())
    fail(BRISK_ERR_INVALID_ARGUMENT, "the calibration text is shorter than one chunk of " + std::to_string(n_ctx) + " tokens");
  info.chunks_total = static_cast<uint32_t>(chunks.chunks.size());
  info.tokens_available = chunks.available_tokens;
  info.complete = false;

  size_t start = 0;
  if (o.resume && std::filesystem::exists(out_path)) {
    Stats old = read_stats(out_path);
    check_resumable(old.info, info, out_path);
    fit_stats_to_model(old, model->file(), out_path);  // before the collector adds to any row
    if (old.info.complete) {
      if (o.log) o.log("'" + out_path + "' is already complete; nothing to resume");
      return old.info;
    }
    st.matrices = std::move(old.matrices);
    start = old.info.chunks_done;
    if (o.log) o.log("resuming at chunk " + std::to_string(start) + " of " + std::to_string(info.chunks_total));
  }

  EvalOptions eo;
  eo.n_ctx = n_ctx;
  eo.n_threads = o.n_threads;
  Evaluator ev(*model, eo);
  StatsCollector collector(st);
  ev.set_observer(&collector);
  const uint64_t total_tokens = static_cast<uint64_t>(chunks.chunks.size()) * n_ctx;
  double last_save = now();
  auto save = [&](size_t done) {
    info.chunks_done = static_cast<uint32_t>(done);
    info.tokens_done = static_cast<uint64_t>(done) * n_ctx;
    info.complete = done == chunks.chunks.size();
    write_stats(out_path, st);
    last_save = now();
  };
  for (size_t c = start; c < chunks.chunks.size(); ++c) {
    if (o.progress && !o.progress(static_cast<uint64_t>(c) * n_ctx, total_tokens)) {
      save(c);
      fail(BRISK_ERR_CANCELLED, "calibration stopped after " + std::to_string(c) + " of " +
                                    std::to_string(chunks.chunks.size()) + " chunks; '" + out_path +
                                    "' records how far it got (continue with --resume)");
    }
    ev.run(chunks.chunks[c].data(), n_ctx);
    if (now() - last_save > o.checkpoint_seconds) save(c + 1);
  }
  save(chunks.chunks.size());
  if (o.progress) o.progress(total_tokens, total_tokens);
  return info;
}

}  // namespace brisk::calib
