// SPDX-License-Identifier: MIT
// Calibration statistics (imatrix) files: read, then used as brisk uses
// them: importance for weighted quantization (preset, and the automatic
// per-tensor precision with target_bpw), and as the partial file of a
// resumed calibration run.
// The model is a one-layer synthetic llama made at start-up (matrices of 64
// and 128 columns, 320 tokens); seeds are statistics files in its shape.
// The resumed file keeps the input's matrices, chunks done and "complete"
// flag but takes the description of a fresh run (model hash, data hashes,
// chunk counts): a mismatch there only makes resume refuse, while the
// matrices are what the run then adds to. The data paths a file names are
// dropped before quantizing, so no test reads files an input names.
#include <filesystem>

#include "calibration/calibrate.h"
#include "calibration/calibrated.h"
#include "calibration/stats.h"
#include "fuzz_util.h"
#include "model/synthetic.h"

namespace {

using namespace brisk;

struct Setup {
  std::filesystem::path dir;
  std::string model, data;
  calib::StatsInfo fresh;  // what a fresh run over the data records
};

calib::CalibrateOptions calibrate_options(const Setup& s) {
  calib::CalibrateOptions o;
  o.data = {s.data};
  o.n_ctx = 16;
  o.n_threads = 1;
  o.checkpoint_seconds = 1e9;
  return o;
}

const Setup& setup() {
  static const Setup s = [] {
    Setup s;
    s.dir = fuzz::scratch_dir() / "calibration";
    std::filesystem::create_directories(s.dir);
    s.model = (s.dir / "model.gguf").string();
    s.data = (s.dir / "data.txt").string();
    SyntheticShape shape;
    shape.name = "fuzz";
    shape.n_embd = 64;
    shape.n_layer = 1;
    shape.n_head = 4;
    shape.n_head_kv = 2;
    shape.n_ff = 128;
    shape.n_vocab = 320;  // the synthetic vocabulary's fixed part is 312 tokens
    shape.n_ctx = 64;
    write_synthetic_model(shape, TensorType::F32, 1, s.model, 1);
    std::string text;
    for (int i = 0; i < 12; ++i) text += "the cat sat on the mat and then it ran to see a dog in the sun\n";
    FILE* f = std::fopen(s.data.c_str(), "wb");
    if (!f || std::fwrite(text.data(), 1, text.size(), f) != text.size() || std::fclose(f) != 0) std::abort();
    const std::string ref = (s.dir / "fresh.gguf").string();
    s.fresh = calib::calibrate(s.model, ref, calibrate_options(s));
    return s;
  }();
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Setup& s = setup();
  calib::Stats st;
  bool read = false;
  fuzz::expect_clean([&] {
    st = calib::read_stats(fuzz::as_file(data, size));
    (void)st.importance();
    read = true;
  });
  if (!read) return 0;
  const std::string stats = (s.dir / "stats.gguf").string();
  const std::string out = (s.dir / "out.gguf").string();
  st.info.sources.clear();
  fuzz::expect_clean([&] { calib::write_stats(stats, st); });
  for (int mode = 0; mode < 2; ++mode) {
    fuzz::expect_clean([&] {
      calib::CalibratedOptions o;
      o.quant.preset = mode == 0 ? "q4_k_m" : "q8_0";
      o.quant.n_threads = 1;
      o.stats_path = stats;
      o.target_bpw = mode == 0 ? 0 : 5.0;
      o.measure_kl = false;
      o.report = false;
      (void)calib::quantize_calibrated(s.model, out, o);
    });
  }
  // Resume: the input's matrices and progress under a fresh run's description.
  calib::StatsInfo info = s.fresh;
  info.chunks_done = st.info.chunks_done;
  info.complete = st.info.complete;
  st.info = info;
  fuzz::expect_clean([&] {
    calib::write_stats(stats, st);
    calib::CalibrateOptions o = calibrate_options(s);
    o.resume = true;
    (void)calib::calibrate(s.model, stats, o);
  });
  std::error_code ec;
  std::filesystem::remove(stats, ec);
  std::filesystem::remove(out, ec);
  return 0;
}
