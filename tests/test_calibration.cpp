// SPDX-License-Identifier: MIT
// Calibration mechanics: importance lowers the weighted error, statistics
// files (ours and llama.cpp's) read back, stop/resume gives the same result,
// the size budget holds, recipe and data hashes are recorded, and evaluating
// on calibration text is refused or flagged.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "brisk/brisk.h"
#include "brisk/brisk_experimental.h"
#include "calibration/calibrated.h"
#include "calibration/sensitivity.h"
#include "calibration/stats.h"
#include "gguf/gguf.h"
#include "quant/quant.h"
#include "test_data.h"

namespace {

namespace fs = std::filesystem;
using brisk::TensorType;

std::string scratch(const std::string& name) { return (brisk::test::scratch_dir() / name).string(); }

brisk_status calibrate(const std::string& model, const std::string& data, const std::string& out, int stop_after = -1,
                       bool resume = false) {
  const char* paths[] = {data.c_str()};
  brisk_calibrate_options o;
  brisk_calibrate_options_init(&o);
  o.data_paths = paths;
  o.n_data_paths = 1;
  o.n_ctx = 128;
  o.max_tokens = 128 * 6;
  o.resume = resume;
  struct Stop {
    int calls = 0, after;
  } stop{0, stop_after};
  if (stop_after >= 0) {
    o.progress_user_data = &stop;
    o.progress_fn = [](void* ud, const char*, uint64_t, uint64_t, const char*) {
      Stop* s = static_cast<Stop*>(ud);
      return s->calls++ >= s->after ? 1 : 0;
    };
  }
  return brisk_calibrate(model.c_str(), out.c_str(), &o);
}

}  // namespace

TEST_CASE("calibration: importance lowers the weighted error on skewed activations", "[calibration]") {
  // A few columns carry most of the activation energy (as in real models);
  // a fit that knows it should spend its precision there.
  const int n = 512;
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0, 1);
  std::vector<float> w(n), imp(n);
  for (int i = 0; i < n; ++i) {
    w[i] = nd(rng) * 0.02f;
    imp[i] = i % 37 == 0 ? 400.0f : 0.05f + 0.01f * (i % 5);
  }
  for (TensorType t : {TensorType::Q4_0, TensorType::Q4_1, TensorType::Q8_0, TensorType::Q4_K, TensorType::Q5_K,
                       TensorType::Q6_K}) {
    INFO(brisk::type_name(t));
    std::vector<uint8_t> q(brisk::row_bytes(t, n));
    std::vector<float> d(n);
    auto err = [&](const float* importance) {
      brisk::quant::quantize_row(t, w.data(), q.data(), n, importance);
      brisk::quant::dequantize_row(t, q.data(), d.data(), n);
      double e = 0;
      for (int i = 0; i < n; ++i) e += imp[i] * (w[i] - d[i]) * (w[i] - d[i]);
      return e;
    };
    const double plain = err(nullptr), weighted = err(imp.data());
    CHECK(weighted < plain);
  }
}

TEST_CASE("calibration: allocation respects the budget and minimises damage", "[calibration]") {
  using brisk::calib::Candidate;
  using brisk::calib::TensorSensitivity;
  std::vector<TensorSensitivity> ts(3);
  // Tensor 0 is very sensitive, tensor 2 hardly at all.
  const double sens[3] = {10, 1, 0.01};
  for (int i = 0; i < 3; ++i) {
    ts[i].name = std::to_string(i);  // ("t" + to_string trips a GCC 12 -Wrestrict false positive)
    ts[i].candidates = {{TensorType::Q4_K, 1000, 0, 4 * sens[i]}, {TensorType::Q6_K, 1500, 0, 1 * sens[i]},
                        {TensorType::Q8_0, 2000, 0, 0.25 * sens[i]}};
  }
  brisk::calib::allocate(ts, 4600);
  uint64_t bytes = 0;
  for (auto& t : ts) bytes += t.candidates[t.chosen].bytes;
  CHECK(bytes <= 4600);
  CHECK(ts[0].chosen == 2);  // the sensitive one gets the most bits
  CHECK(ts[2].chosen == 0);
  CHECK_THROWS(brisk::calib::allocate(ts, 2999));
  CHECK(brisk::calib::spearman({1, 2, 3, 4}, {10, 20, 30, 40}) == Approx(1.0));
}

TEST_CASE("calibration: llama.cpp imatrix files read as statistics", "[calibration]") {
  BRISK_TEST_FILE(path, "models/logstories/logstories.imatrix");
  const brisk::calib::Stats st = brisk::calib::read_stats(path);
  CHECK(st.matrices.size() == 42);
  CHECK(st.info.version == 0);
  CHECK(st.info.chunks_done == 954);
  const auto imp = st.importance();
  REQUIRE(imp.count("blk.0.ffn_down.weight"));
  CHECK(imp.at("blk.0.ffn_down.weight").size() == 768);
}

TEST_CASE("calibration: stop and resume give the statistics of an uninterrupted run", "[calibration]") {
  BRISK_TEST_FILE(model, "models/stories260K.gguf");
  BRISK_TEST_FILE(data, "data/splits/stories-calib.txt");
  const std::string full = scratch("full.calib"), part = scratch("part.calib");
  REQUIRE(calibrate(model, data, full) == BRISK_OK);
  CHECK(calibrate(model, data, part, 2) == BRISK_ERR_CANCELLED);
  const brisk::calib::Stats partial = brisk::calib::read_stats(part);
  CHECK_FALSE(partial.info.complete);
  CHECK(partial.info.chunks_done == 2);
  CHECK(partial.info.chunks_total == 6);
  REQUIRE(calibrate(model, data, part, -1, true) == BRISK_OK);
  const brisk::calib::Stats a = brisk::calib::read_stats(full), b = brisk::calib::read_stats(part);
  CHECK(b.info.complete);
  CHECK(a.info.tokens_done == 6 * 128);
  REQUIRE(a.matrices.size() == 36);  // 5 layers x 7 + output
  for (const auto& [name, s] : a.matrices) {
    INFO(name);
    CHECK(b.matrices.at(name).count == s.count);
    for (size_t i = 0; i < s.sum2.size(); ++i) CHECK(b.matrices.at(name).sum2[i] == Approx(s.sum2[i]).epsilon(1e-6));
  }
  REQUIRE(a.info.sources.size() == 1);
  CHECK(a.info.sources[0].hash.rfind("xxh3:", 0) == 0);
  CHECK(a.info.sources[0].heldout_bytes > 0);
  CHECK(a.info.sources[0].calib_bytes + a.info.sources[0].heldout_bytes == a.info.sources[0].bytes);
}

TEST_CASE("calibration: budgeted quantization writes recipe and report and guards the calibration text", "[calibration]") {
  BRISK_TEST_FILE(model, "models/stories260K.gguf");
  BRISK_TEST_FILE(data, "data/splits/stories-calib.txt");
  const std::string stats = scratch("q.calib");
  REQUIRE(calibrate(model, data, stats) == BRISK_OK);
  const std::string out = scratch("auto.gguf");
  brisk_quantize_options o;
  brisk_quantize_options_init(&o);
  o.type = "q4_0";
  o.calibration = stats.c_str();
  const char* data_paths[] = {data.c_str()};
  o.calibration_data = data_paths;
  o.n_calibration_data = 1;
  o.target_size = 300000;
  o.sensitivity_tokens = 128;
  o.eval_max_chunks = 4;
  REQUIRE(brisk_quantize(model.c_str(), out.c_str(), &o) == BRISK_OK);
  CHECK(fs::file_size(out) <= 300000);
  const brisk::gguf::File f(out);
  CHECK(f.get_string("brisk.recipe.method") == "kl-scaled-error");
  CHECK(f.get_array("brisk.recipe.types", brisk::gguf::ValueType::STRING).count == 37);  // 5 x 7 + token_embd + output
  const auto& hashes = f.get_array("brisk.calibration.data.hashes", brisk::gguf::ValueType::STRING);
  REQUIRE(hashes.items.size() == 1);
  CHECK(std::string(hashes.items[0].str).rfind("xxh3:", 0) == 0);

  std::ifstream rj(brisk::calib::report_path(out, "json"));
  const nlohmann::json report = nlohmann::json::parse(rj);
  CHECK(report["data"][0]["hash"] == std::string(hashes.items[0].str));
  CHECK(report["evaluated_on_calibration_text"] == false);
  CHECK(report["quality"]["kld_mean"].get<double>() >= 0);
  CHECK(report["size"]["file_bytes"].get<uint64_t>() <= 300000);
  CHECK(fs::exists(brisk::calib::report_path(out, "md")));

  // A smaller budget gives a smaller file; an impossible one is an error.
  // (270500: 268000 plus the 2.2 KB checksum manifest every brisk GGUF carries.)
  o.target_size = 270500;
  o.report = 0;
  REQUIRE(brisk_quantize(model.c_str(), scratch("auto2.gguf").c_str(), &o) == BRISK_OK);
  CHECK(fs::file_size(scratch("auto2.gguf")) <= 270500);
  o.target_size = 100000;
  CHECK(brisk_quantize(model.c_str(), scratch("auto3.gguf").c_str(), &o) == BRISK_ERR_INVALID_ARGUMENT);

  // Evaluating on the calibration file is refused, or flagged when forced.
  o.target_size = 0;
  o.report = 1;
  o.eval_file = data.c_str();
  CHECK(brisk_quantize(model.c_str(), scratch("evalcal.gguf").c_str(), &o) == BRISK_ERR_INVALID_ARGUMENT);
  o.eval_on_calib = 1;
  REQUIRE(brisk_quantize(model.c_str(), scratch("evalcal.gguf").c_str(), &o) == BRISK_OK);
  std::ifstream rj2(brisk::calib::report_path(scratch("evalcal.gguf"), "json"));
  const nlohmann::json flagged = nlohmann::json::parse(rj2);
  CHECK(flagged["evaluated_on_calibration_text"] == true);
  CHECK(flagged["warnings"].size() >= 1);
}

TEST_CASE("compare: identical models agree and a 4-bit copy is compared token by token", "[calibration]") {
  BRISK_TEST_FILE(a_path, "models/stories260K.gguf");
  BRISK_TEST_FILE(b_path, "models/stories260K-q4_0.gguf");
  brisk_model *a = nullptr, *b = nullptr;
  REQUIRE(brisk_model_open(a_path.c_str(), nullptr, &a) == BRISK_OK);
  REQUIRE(brisk_model_open(b_path.c_str(), nullptr, &b) == BRISK_OK);
  const char* prompts[] = {"Once upon a time", "The little dog"};
  brisk_compare_options o;
  brisk_compare_options_init(&o);
  o.n_predict = 24;
  brisk_compare_result* r = nullptr;
  REQUIRE(brisk_compare(a, a, prompts, 2, &o, &r) == BRISK_OK);
  double v = 0;
  REQUIRE(brisk_compare_result_value(r, "identical_pct", &v) == BRISK_OK);
  CHECK(v == 100.0);
  brisk_compare_result_free(r);
  REQUIRE(brisk_compare(a, b, prompts, 2, &o, &r) == BRISK_OK);
  size_t need = 0;
  CHECK(brisk_compare_result_json(r, nullptr, 0, &need) == BRISK_ERR_BUFFER_TOO_SMALL);
  std::string js(need, '\0');
  REQUIRE(brisk_compare_result_json(r, js.data(), js.size(), &need) == BRISK_OK);
  js.resize(need - 1);
  const nlohmann::json j = nlohmann::json::parse(js);
  REQUIRE(j["prompts"].size() == 2);
  for (const auto& p : j["prompts"]) {
    if (p["identical"].get<bool>()) {
      CHECK(p["first_divergence_token"] == -1);
    } else {
      const int k = p["first_divergence_token"].get<int>();
      CHECK(k >= 0);
      if (k < static_cast<int>(p["tokens_a"].size()) && k < static_cast<int>(p["tokens_b"].size()))
        CHECK(p["tokens_a"][k] != p["tokens_b"][k]);
      CHECK(p["first_divergence_char"].get<int>() >= 0);
    }
  }
  brisk_compare_result_free(r);
  brisk_model_close(b);
  brisk_model_close(a);
}
