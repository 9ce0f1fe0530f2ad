// SPDX-License-Identifier: MIT
// What fuzzing found (inputs in fuzz/corpus/*/crash-*), checked by what the
// fix promises: one clear error, no output. The corpus replay alone cannot
// tell these apart from success outside a sanitizer build.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "calibration/stats.h"
#include "convert_util.h"
#include "core/error.h"
#include "gguf/writer.h"

using brisk::test::scratch_dir;
using brisk::test::write_bytes;

namespace {

// A llama2.c checkpoint (dim 32, one layer) and its tokenizer, with one
// weight of the embedding set to `bad`.
void write_llama2c(const std::string& model, const std::string& tok, float bad) {
  const int32_t dim = 32, hidden = 32, layers = 1, heads = 2, kv = 2, vocab = 4, seq = 4;
  const int64_t hs = dim / heads;
  const int64_t n = vocab * dim + layers * (dim + 4 * dim * dim + dim + 3 * hidden * dim) + dim + seq * hs;
  std::vector<float> w(static_cast<size_t>(n), 0.01f);
  w[5] = bad;
  const int32_t head[7] = {dim, hidden, layers, heads, kv, vocab, seq};
  std::string ck(reinterpret_cast<const char*>(head), sizeof head);
  ck.append(reinterpret_cast<const char*>(w.data()), w.size() * sizeof(float));
  write_bytes(model, ck);
  std::string t(4, '\0');
  for (const char* s : {"<unk>", "<s>", "</s>", " a"}) {
    const float score = 0;
    const int32_t len = static_cast<int32_t>(std::strlen(s));
    t.append(reinterpret_cast<const char*>(&score), 4);
    t.append(reinterpret_cast<const char*>(&len), 4);
    t += s;
  }
  write_bytes(tok, t);
}

}  // namespace

TEST_CASE("fuzz findings: NaN or infinite weights are refused when quantized, kept in float", "[fuzz]") {
  const auto dir = scratch_dir();
  const std::string model = (dir / "nan.bin").string(), tok = (dir / "nan-tok.bin").string();
  const std::string f32 = (dir / "nan-f32.gguf").string(), q = (dir / "nan-q8.gguf").string();
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    write_llama2c(model, tok, bad);
    brisk_convert_options o;
    brisk_convert_options_init(&o);
    o.n_threads = 1;
    o.type = BRISK_TYPE_Q8_0;
    CHECK(brisk_convert_llama2c(model.c_str(), tok.c_str(), q.c_str(), &o) == BRISK_ERR_BAD_FORMAT);
    CHECK_THAT(brisk_last_error(), Catch::Contains("token_embd.weight") && Catch::Contains("NaN or infinite"));
    CHECK_FALSE(std::filesystem::exists(q));
    // Float storage keeps what the file says; quantizing that file later is refused.
    o.type = BRISK_TYPE_AUTO;
    REQUIRE(brisk_convert_llama2c(model.c_str(), tok.c_str(), f32.c_str(), &o) == BRISK_OK);
    brisk_quantize_options qo;
    brisk_quantize_options_init(&qo);
    qo.type = "q4_0";
    qo.n_threads = 1;
    CHECK(brisk_quantize(f32.c_str(), q.c_str(), &qo) == BRISK_ERR_BAD_FORMAT);
    CHECK_THAT(brisk_last_error(), Catch::Contains("NaN or infinite"));
    CHECK_FALSE(std::filesystem::exists(q));
  }
}

TEST_CASE("fuzz findings: calibration files with impossible sums, counts or data sizes are refused", "[fuzz]") {
  const std::string path = (scratch_dir() / "bad.imatrix").string();
  auto write = [&](float sum2, float count, const std::string& bytes) {
    brisk::gguf::Writer w;
    w.add_string("general.type", "imatrix");
    w.add_u32("brisk.calibration.version", 1);
    w.add_strings("brisk.calibration.data.paths", {"data.txt"});
    w.add_strings("brisk.calibration.data.bytes", {bytes});
    w.add_tensor("blk.0.attn_q.weight.in_sum2", brisk::TensorType::F32, {4});
    w.add_tensor("blk.0.attn_q.weight.counts", brisk::TensorType::F32, {1});
    w.write(path, [&](size_t i, const brisk::gguf::Writer::Sink& sink) {
      const float v[4] = {1, 2, sum2, 3};
      if (i == 0) sink(v, sizeof v);
      else sink(&count, sizeof count);
    });
  };
  auto refused = [&](const char* why) {
    INFO(why);
    try {
      (void)brisk::calib::read_stats(path);
      FAIL("read a bad calibration file");
    } catch (const brisk::Error& e) {
      CHECK(e.code() == BRISK_ERR_BAD_FORMAT);
    }
  };
  write(1, 16, "100");
  CHECK(brisk::calib::read_stats(path).matrices.at("blk.0.attn_q.weight").count == 16);
  write(1, 7.2e35f, "100");
  refused("count beyond uint64");
  write(1, std::numeric_limits<float>::quiet_NaN(), "100");
  refused("NaN count");
  write(-1, 16, "100");
  refused("negative sum of squares");
  write(std::numeric_limits<float>::infinity(), 16, "100");
  refused("infinite sum of squares");
  write(1, 16, "12x");
  refused("data size not a number");
  write(1, 16, "-1");
  refused("negative data size");
}
