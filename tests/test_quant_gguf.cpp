// SPDX-License-Identifier: MIT
// Bit-exactness against files written by llama.cpp's llama-quantize (no
// importance matrix): quantizing the F32 original with brisk must give the
// very bytes llama.cpp stored, tensor by tensor.
//
// The GGUF reading here is a deliberately tiny test-only parser (it only
// needs tensor names, shapes, types and data); the engine has its own reader.
#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/tensor_type.h"
#include "quant/quant.h"
#include "test_data.h"

namespace {

struct TinyTensor {
  std::vector<uint64_t> dims;  // dims[0] = row length
  uint32_t type = 0;
  const uint8_t* data = nullptr;
};

class TinyGguf {
 public:
  explicit TinyGguf(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error("cannot open " + path);
    bytes_.assign(std::istreambuf_iterator<char>(f), {});
    if (rd<uint32_t>() != 0x46554747u) throw std::runtime_error("not GGUF: " + path);
    if (rd<uint32_t>() != 3) throw std::runtime_error("not GGUF v3: " + path);
    const uint64_t n_tensors = rd<uint64_t>();
    const uint64_t n_kv = rd<uint64_t>();
    uint64_t alignment = 32;
    for (uint64_t i = 0; i < n_kv; ++i) {
      const std::string key = rd_str();
      const uint32_t vt = rd<uint32_t>();
      if (key == "general.alignment" && vt == 4) {
        alignment = rd<uint32_t>();
      } else {
        skip_value(vt);
      }
    }
    std::vector<std::pair<std::string, uint64_t>> offsets;
    for (uint64_t i = 0; i < n_tensors; ++i) {
      std::string name = rd_str();
      TinyTensor t;
      const uint32_t nd = rd<uint32_t>();
      for (uint32_t d = 0; d < nd; ++d) t.dims.push_back(rd<uint64_t>());
      t.type = rd<uint32_t>();
      offsets.emplace_back(name, rd<uint64_t>());
      tensors_[name] = t;
    }
    const size_t data_start = (pos_ + alignment - 1) / alignment * alignment;
    for (auto& [name, off] : offsets) {
      TinyTensor& t = tensors_[name];
      const size_t size = brisk::row_bytes(static_cast<brisk::TensorType>(t.type),
                                           static_cast<int64_t>(t.dims[0])) * rows(t);
      if (data_start + off + size > bytes_.size()) throw std::runtime_error("tensor past EOF");
      t.data = bytes_.data() + data_start + off;
    }
  }

  const std::map<std::string, TinyTensor>& tensors() const { return tensors_; }

  static uint64_t rows(const TinyTensor& t) {
    uint64_t r = 1;
    for (size_t i = 1; i < t.dims.size(); ++i) r *= t.dims[i];
    return r;
  }

 private:
  template <typename T>
  T rd() {
    if (pos_ + sizeof(T) > bytes_.size()) throw std::runtime_error("truncated GGUF");
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string rd_str() {
    const uint64_t n = rd<uint64_t>();
    if (pos_ + n > bytes_.size()) throw std::runtime_error("truncated GGUF string");
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  void skip_value(uint32_t vt) {
    static const size_t kSizes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    if (vt == 8) {
      rd_str();
    } else if (vt == 9) {
      const uint32_t et = rd<uint32_t>();
      const uint64_t n = rd<uint64_t>();
      for (uint64_t i = 0; i < n; ++i) skip_value(et);
    } else if (vt < 13) {
      pos_ += kSizes[vt];
    } else {
      throw std::runtime_error("bad GGUF value type");
    }
  }

  std::vector<uint8_t> bytes_;
  size_t pos_ = 0;
  std::map<std::string, TinyTensor> tensors_;
};

// Quantizes every tensor of `quantized` whose type is in `types` from the F32
// tensor of the same name in `original`, and requires identical bytes.
// Returns how many tensors of each type were compared.
std::map<uint32_t, int> check_file(const TinyGguf& original, const TinyGguf& quantized,
                                   std::vector<brisk::TensorType> types) {
  std::map<uint32_t, int> compared;
  for (const auto& [name, qt] : quantized.tensors()) {
    bool wanted = false;
    for (auto t : types) wanted |= static_cast<uint32_t>(t) == qt.type;
    if (!wanted) continue;
    INFO("tensor " << name << " type " << brisk::type_traits(qt.type).name);
    auto it = original.tensors().find(name);
    REQUIRE(it != original.tensors().end());
    const TinyTensor& ft = it->second;
    REQUIRE(ft.type == 0);
    REQUIRE(ft.dims == qt.dims);
    const auto type = static_cast<brisk::TensorType>(qt.type);
    const int64_t n = static_cast<int64_t>(ft.dims[0]);
    const size_t rb = brisk::row_bytes(type, n);
    std::vector<uint8_t> row(rb);
    const auto* src = reinterpret_cast<const float*>(ft.data);
    uint64_t mismatched_rows = 0, first_bad = 0;
    for (uint64_t r = 0; r < TinyGguf::rows(ft); ++r) {
      const size_t written = brisk::quant::quantize_row(type, src + r * n, row.data(), n);
      REQUIRE(written == rb);
      if (std::memcmp(row.data(), qt.data + r * rb, rb) != 0) {
        if (mismatched_rows++ == 0) first_bad = r;
      }
    }
    INFO("first mismatching row " << first_bad);
    CHECK(mismatched_rows == 0);
    ++compared[qt.type];
  }
  return compared;
}

}  // namespace

TEST_CASE("stories260K: F16/Q8_0/Q4_0/Q4_1 bytes equal llama-quantize output", "[quant]") {
  BRISK_TEST_FILE(f32_path, "models/stories260K.gguf");
  BRISK_TEST_FILE(f16_path, "models/stories260K-f16.gguf");
  BRISK_TEST_FILE(q8_path, "models/stories260K-q8_0.gguf");
  BRISK_TEST_FILE(q40_path, "models/stories260K-q4_0.gguf");
  BRISK_TEST_FILE(q41_path, "models/stories260K-q4_1.gguf");
  using brisk::TensorType;
  const TinyGguf f32(f32_path);

  // Per SOURCES.md: 37 F16 in the f16 file; 32 Q8_0 + 5 F16 in q8_0;
  // 31 Q4_0 (Q4_1) + 1 Q8_0 + 5 F16 in q4_0 (q4_1).
  auto c16 = check_file(f32, TinyGguf(f16_path), {TensorType::F16});
  CHECK(c16[1] == 37);
  auto c8 = check_file(f32, TinyGguf(q8_path), {TensorType::Q8_0, TensorType::F16});
  CHECK(c8[8] == 32);
  CHECK(c8[1] == 5);
  auto c40 = check_file(f32, TinyGguf(q40_path),
                        {TensorType::Q4_0, TensorType::Q8_0, TensorType::F16});
  CHECK(c40[2] == 31);
  CHECK(c40[8] == 1);
  auto c41 = check_file(f32, TinyGguf(q41_path),
                        {TensorType::Q4_1, TensorType::Q8_0, TensorType::F16});
  CHECK(c41[3] == 31);
  CHECK(c41[8] == 1);
}

TEST_CASE("logstories: Q4_K/Q6_K (Q4_K_M), Q8_0, Q4_0, F16 bytes equal llama-quantize output",
          "[quant]") {
  BRISK_TEST_FILE(f32_path, "models/logstories/logstories-f32.gguf");
  BRISK_TEST_FILE(km_path, "models/logstories/logstories-q4_k_m.gguf");
  BRISK_TEST_FILE(q8_path, "models/logstories/logstories-q8_0.gguf");
  BRISK_TEST_FILE(q40_path, "models/logstories/logstories-q4_0.gguf");
  BRISK_TEST_FILE(f16_path, "models/logstories/logstories-f16.gguf");
  using brisk::TensorType;
  const TinyGguf f32(f32_path);

  auto km = check_file(f32, TinyGguf(km_path),
                       {TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K, TensorType::Q8_0,
                        TensorType::F16});
  CHECK(km[12] > 0);  // Q4_K
  CHECK(km[14] > 0);  // Q6_K
  auto c8 = check_file(f32, TinyGguf(q8_path), {TensorType::Q8_0, TensorType::F16});
  CHECK(c8[8] > 0);
  auto c40 = check_file(f32, TinyGguf(q40_path),
                        {TensorType::Q4_0, TensorType::Q8_0, TensorType::Q6_K, TensorType::F16});
  CHECK(c40[2] > 0);
  auto c16 = check_file(f32, TinyGguf(f16_path), {TensorType::F16});
  CHECK(c16[1] > 0);
}

// Real importance: llama-imatrix's mean squared activations per column
// (in_sum2 / counts) for logstories. Brisk's weighted encoders must lower the
// importance-weighted error of every Q4_K/Q6_K tensor against plain
// quantization, and should do at least as well on that objective as
// llama.cpp's own imatrix quantization (same file, same imatrix). llama.cpp
// weights elements by imatrix * sqrt(sigma^2 + x^2) rather than by the
// imatrix alone, so it is not aiming at exactly this objective.
TEST_CASE("logstories imatrix: weighted quantization beats plain and llama.cpp's imatrix output",
          "[quant]") {
  BRISK_TEST_FILE(f32_path, "models/logstories/logstories-f32.gguf");
  BRISK_TEST_FILE(km_path, "models/logstories/logstories-q4_k_m-imatrix-logs.gguf");
  BRISK_TEST_FILE(imat_path, "models/logstories/logstories.imatrix");
  const TinyGguf f32(f32_path), km(km_path), imat(imat_path);
  double total_plain = 0, total_brisk = 0, total_llama = 0;
  int compared = 0;
  for (const auto& [name, qt] : km.tensors()) {
    const auto type = static_cast<brisk::TensorType>(qt.type);
    if (type != brisk::TensorType::Q4_K && type != brisk::TensorType::Q6_K) continue;
    auto sum2 = imat.tensors().find(name + ".in_sum2");
    auto counts = imat.tensors().find(name + ".counts");
    if (sum2 == imat.tensors().end() || counts == imat.tensors().end()) continue;
    const TinyTensor& ft = f32.tensors().at(name);
    const int64_t n = static_cast<int64_t>(ft.dims[0]);
    REQUIRE(sum2->second.dims[0] == ft.dims[0]);
    REQUIRE(sum2->second.dims.size() == 1);  // no per-expert matrices in this model
    float count;
    std::memcpy(&count, counts->second.data, sizeof(count));
    std::vector<float> imp(static_cast<size_t>(n));
    std::memcpy(imp.data(), sum2->second.data, imp.size() * sizeof(float));
    for (float& v : imp) v /= count;

    const auto* src = reinterpret_cast<const float*>(ft.data);
    const size_t rb = brisk::row_bytes(type, n);
    std::vector<uint8_t> buf(rb);
    std::vector<float> y(static_cast<size_t>(n));
    auto werr = [&](const float* x) {
      double e = 0;
      for (int64_t i = 0; i < n; ++i) e += imp[i] * (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
      return e;
    };
    double plain = 0, brisk_w = 0, llama = 0;
    for (uint64_t r = 0; r < TinyGguf::rows(ft); ++r) {
      const float* x = src + r * n;
      brisk::quant::quantize_row(type, x, buf.data(), n);
      brisk::quant::dequantize_row(type, buf.data(), y.data(), n);
      plain += werr(x);
      brisk::quant::quantize_row(type, x, buf.data(), n, imp.data());
      brisk::quant::dequantize_row(type, buf.data(), y.data(), n);
      brisk_w += werr(x);
      brisk::quant::dequantize_row(type, qt.data + r * rb, y.data(), n);
      llama += werr(x);
    }
    INFO(name << " " << brisk::type_name(type) << ": plain " << plain << " brisk " << brisk_w
              << " llama.cpp " << llama);
    CHECK(brisk_w < plain);
    total_plain += plain;
    total_brisk += brisk_w;
    total_llama += llama;
    ++compared;
  }
  INFO("totals: plain " << total_plain << " brisk " << total_brisk << " llama.cpp "
                        << total_llama);
  CHECK(compared > 0);
  // Measured: plain 8.588, brisk 8.186, llama.cpp 8.382. This imatrix is
  // only mildly skewed, so the gain is a few percent, not a factor.
  CHECK(total_brisk < 0.97 * total_plain);
  CHECK(total_brisk < total_llama);
}
