// SPDX-License-Identifier: MIT
// Files that lie about their counts: each must be refused with one clear
// error, in bounded memory, before anything is sized by the lie. Inputs are
// made at test time from the shared models or from scratch.
#include <sys/stat.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>

#include "brisk/brisk.h"
#include "calibration/stats.h"
#include "core/json_depth.h"
#include "hostile_util.h"
#include "model/model.h"
#include "test_data.h"
#include "tokenizer/tokenizer.h"

using namespace brisk;
using brisk::test::expect_error;
using brisk::test::read_bytes;
using brisk::test::run_hostile;
using brisk::test::write_bytes;

namespace {

namespace fs = std::filesystem;

std::string scratch(const std::string& name) { return (brisk::test::scratch_dir() / name).string(); }

// Replaces the value of a uint32 metadata key in a GGUF image.
std::string patch_u32(std::string gguf, const std::string& key, uint32_t value) {
  std::string needle(8, '\0');
  const uint64_t n = key.size();
  std::memcpy(needle.data(), &n, 8);
  needle += key;
  const size_t at = gguf.find(needle);
  REQUIRE(at != std::string::npos);
  uint32_t type;
  std::memcpy(&type, gguf.data() + at + needle.size(), 4);
  REQUIRE(type == 4);  // UINT32
  std::memcpy(gguf.data() + at + needle.size() + 4, &value, 4);
  return gguf;
}

std::string nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// A copy of an HF model directory with some files replaced.
std::string hf_copy(const std::string& src, const std::string& name, const std::string& file, const std::string& text) {
  const fs::path dir = brisk::test::scratch_dir() / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(src)) fs::create_symlink(e.path(), dir / e.path().filename());
  fs::remove(dir / file);
  write_bytes((dir / file).string(), text);
  return dir.string();
}

brisk_status last_status_message(brisk_status st, std::string* msg) {
  *msg = brisk_last_error();
  return st;
}

}  // namespace

TEST_CASE("hostile gguf: a block count far beyond the tensors is refused before sizing layers", "[hostile]") {
  BRISK_TEST_FILE(model, "models/stories260K.gguf");
  const std::string path = scratch("blocks16m.gguf");
  write_bytes(path, patch_u32(read_bytes(model), "llama.block_count", 16777216));
  run_hostile([&] {
    return expect_error([&] { Model::open(path); }, BRISK_ERR_BAD_FORMAT, "block_count");
  });
  // Just inside the range check but still more layers than the file holds.
  write_bytes(path, patch_u32(read_bytes(model), "llama.block_count", 4000));
  run_hostile([&] {
    return expect_error([&] { Model::open(path); }, BRISK_ERR_BAD_FORMAT, "needs at least 36000 tensors");
  });
}

TEST_CASE("hostile gguf: widths and head counts are bounded", "[hostile]") {
  BRISK_TEST_FILE(model, "models/stories260K.gguf");
  const std::string path = scratch("wide.gguf");
  const std::string bytes = read_bytes(model);
  write_bytes(path, patch_u32(bytes, "llama.embedding_length", 1u << 30));
  run_hostile([&] { return expect_error([&] { Model::open(path); }, BRISK_ERR_BAD_FORMAT, "embedding_length"); });
  write_bytes(path, patch_u32(bytes, "llama.feed_forward_length", 0xFFFFFFFFu));
  run_hostile([&] { return expect_error([&] { Model::open(path); }, BRISK_ERR_BAD_FORMAT, "feed_forward_length"); });
  // In range, but the tensors say otherwise: the shapes are checked against the config.
  write_bytes(path, patch_u32(bytes, "llama.feed_forward_length", 4096));
  run_hostile([&] { return expect_error([&] { Model::open(path); }, BRISK_ERR_BAD_FORMAT, "has shape"); });
}

TEST_CASE("hostile tokenizer.json: a huge token id does not size the vocabulary", "[hostile]") {
  run_hostile([] {
    return expect_error([] { Tokenizer::from_hf_json(R"({"model":{"type":"BPE","vocab":{"a":1073741822},"merges":[]}})"); },
                        BRISK_ERR_BAD_FORMAT, "token id 1073741822 is out of range");
  });
  run_hostile([] {
    return expect_error(
        [] {
          Tokenizer::from_hf_json(R"({"model":{"type":"BPE","vocab":{"a":0},"merges":[]},)"
                                  R"("added_tokens":[{"id":2000000000,"content":"x","special":true}]})");
        },
        BRISK_ERR_BAD_FORMAT, "out of range");
  });
  // A few holes stay legal: they are padded, as convert_hf_to_gguf.py does.
  auto tok = Tokenizer::from_hf_json(R"({"model":{"type":"BPE","vocab":{"a":0,"b":5},"merges":[]}})");
  CHECK(tok->n_vocab() == 6);
}

TEST_CASE("hostile tokenizer.json: deep nesting is refused before the document is built", "[hostile]") {
  CHECK(json_nesting_depth(R"({"a":"[[[[{{{{","b":[[1],{"c":[]}]})") == 4);
  CHECK(json_nesting_depth(R"(["\"[[[["])") == 1);
  run_hostile([] {
    const std::string deep = R"({"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"decoder":)" + nested(200000) + "}";
    return expect_error([&] { Tokenizer::from_hf_json(deep); }, BRISK_ERR_BAD_FORMAT, "nested 200001 levels deep");
  });
}

TEST_CASE("hostile convert: deep JSON in tokenizer.json or config.json is refused, not a stack overflow", "[hostile]") {
  BRISK_TEST_FILE(src, "models/stories260K-hf-f32");
  std::string tj = read_bytes(src + "/tokenizer.json");
  const size_t close = tj.rfind('}');
  REQUIRE(close != std::string::npos);
  tj = tj.substr(0, close) + R"(, "decoder_extra": )" + nested(200000) + "}";
  // The decoder itself, as measured: the converter dumps it.
  std::string tj2 = read_bytes(src + "/tokenizer.json");
  const size_t dec = tj2.find("\"decoder\"");
  REQUIRE(dec != std::string::npos);
  tj2.replace(dec, 9, R"("decoder": {"type":"Sequence","decoders":)" + nested(200000) + R"(}, "x_decoder")");
  std::string cfg = read_bytes(src + "/config.json");
  cfg = cfg.substr(0, cfg.rfind('}')) + R"(, "x": )" + nested(200000) + "}";
  const std::string d1 = hf_copy(src, "deep-tok", "tokenizer.json", tj);
  const std::string d2 = hf_copy(src, "deep-dec", "tokenizer.json", tj2);
  const std::string d3 = hf_copy(src, "deep-cfg", "config.json", cfg);
  for (const std::string& dir : {d1, d2, d3}) {
    INFO(dir);
    run_hostile([&] {
      std::string msg;
      const brisk_status st =
          last_status_message(brisk_convert_hf(dir.c_str(), scratch("deep-out.gguf").c_str(), nullptr), &msg);
      if (st != BRISK_ERR_BAD_FORMAT) return "status " + std::to_string(st) + ": " + msg;
      if (msg.find("nested") == std::string::npos) return "unclear message: " + msg;
      return std::string();
    });
    CHECK_FALSE(fs::exists(scratch("deep-out.gguf")));
  }
}

TEST_CASE("hostile calibration: vectors that do not fit the model are refused before use", "[hostile]") {
  BRISK_TEST_FILE(model, "models/stories260K.gguf");
  calib::Stats st;
  st.info.n_ctx = 64;
  st.matrices["blk.0.attn_q.weight"].sum2.assign(8, 1.0);  // the model's rows have 64 columns
  st.matrices["blk.0.attn_q.weight"].count = 1;
  const std::string path = scratch("short.calib");
  calib::write_stats(path, st);
  run_hostile([&] {
    brisk_quantize_options o;
    brisk_quantize_options_init(&o);
    o.type = "q4_0";
    o.calibration = path.c_str();
    o.target_bpw = 8;
    o.sensitivity_proxy_only = 1;
    o.report = 0;
    std::string msg;
    const brisk_status st = last_status_message(brisk_quantize(model.c_str(), scratch("short-q.gguf").c_str(), &o), &msg);
    if (st != BRISK_ERR_INVALID_ARGUMENT || msg.find("8 columns for 'blk.0.attn_q.weight'") == std::string::npos)
      return "status " + std::to_string(st) + ": " + msg;
    return std::string();
  });
}

TEST_CASE("hostile calibration: resuming with mismatched vectors never writes past them", "[hostile]") {
  BRISK_TEST_FILE(model, "models/stories260K.gguf");
  BRISK_TEST_FILE(data, "data/splits/stories-calib.txt");
  const std::string part = scratch("resume-short.calib");
  const char* paths[] = {data.c_str()};
  brisk_calibrate_options o;
  brisk_calibrate_options_init(&o);
  o.data_paths = paths;
  o.n_data_paths = 1;
  o.n_ctx = 64;
  o.max_tokens = 64 * 4;
  o.progress_user_data = nullptr;
  o.progress_fn = [](void*, const char*, uint64_t done, uint64_t, const char*) { return done >= 64 ? 1 : 0; };
  REQUIRE(brisk_calibrate(model.c_str(), part.c_str(), &o) == BRISK_ERR_CANCELLED);
  calib::Stats st = calib::read_stats(part);
  REQUIRE_FALSE(st.info.complete);
  REQUIRE(st.matrices.count("blk.0.ffn_down.weight"));
  st.matrices["blk.0.ffn_down.weight"].sum2.resize(3);
  calib::write_stats(part, st);
  o.progress_fn = nullptr;
  o.resume = 1;
  run_hostile([&] {
    std::string msg;
    const brisk_status s = last_status_message(brisk_calibrate(model.c_str(), part.c_str(), &o), &msg);
    if (s != BRISK_ERR_INVALID_ARGUMENT || msg.find("3 columns for 'blk.0.ffn_down.weight'") == std::string::npos)
      return "status " + std::to_string(s) + ": " + msg;
    return std::string();
  });
}

TEST_CASE("hostile calibration: counts and sums are validated, recorded paths are not opened", "[hostile]") {
  BRISK_TEST_FILE(model, "models/stories260K.gguf");
  calib::Stats st;
  st.info.version = calib::kStatsVersion;
  st.matrices["blk.0.attn_q.weight"].sum2.assign(64, 1.0);
  st.matrices["blk.0.attn_q.weight"].count = 1;
  calib::DataSource d;
  d.path = scratch("no-such-dir-named-by-the-file");
  d.hash = "xxh3:0000000000000000";
  st.info.sources.push_back(d);
  const std::string path = scratch("paths.calib");
  calib::write_stats(path, st);
  run_hostile([&] {
    struct Log {
      std::string all;
    } log;
    brisk_quantize_options o;
    brisk_quantize_options_init(&o);
    o.type = "q4_0";
    o.calibration = path.c_str();
    o.target_bpw = 8;
    o.sensitivity_tokens = 64;
    o.report = 0;
    o.log_fn = [](void* ud, brisk_log_level, const char* m) { static_cast<Log*>(ud)->all += std::string(m) + "\n"; };
    o.log_user_data = &log;
    std::string msg;
    const brisk_status s = last_status_message(brisk_quantize(model.c_str(), scratch("paths-q.gguf").c_str(), &o), &msg);
    if (s != BRISK_OK) return "status " + std::to_string(s) + ": " + msg;
    if (log.all.find("calibration text not read") == std::string::npos) return "warnings: " + log.all;
    if (log.all.find("no-such-dir") != std::string::npos) return "the recorded path was opened: " + log.all;
    return std::string();
  });

  // A NaN count and a negative sum are format errors, not undefined conversions.
  st.matrices["blk.0.attn_q.weight"].count = 0;
  calib::write_stats(path, st);
  std::string bytes = read_bytes(path);
  size_t sum_at = 0, count_at = 0;
  {
    const gguf::File f(path);
    sum_at = static_cast<size_t>(f.find_tensor("blk.0.attn_q.weight.in_sum2")->data - f.file_data()) + 4 * 5;
    count_at = static_cast<size_t>(f.find_tensor("blk.0.attn_q.weight.counts")->data - f.file_data());
  }
  const float bad[2] = {std::nanf(""), -1.0f};
  std::string neg = bytes;
  std::memcpy(neg.data() + sum_at, &bad[1], 4);
  write_bytes(path, neg);
  CHECK(expect_error([&] { calib::read_stats(path); }, BRISK_ERR_BAD_FORMAT, "negative or non-finite sum at column 5") == "");
  std::string nan = bytes;
  std::memcpy(nan.data() + count_at, &bad[0], 4);
  write_bytes(path, nan);
  CHECK(expect_error([&] { calib::read_stats(path); }, BRISK_ERR_BAD_FORMAT, "invalid count") == "");
}
