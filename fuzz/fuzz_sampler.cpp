// SPDX-License-Identifier: MIT
// The sampler on hostile logits (NaN, +-Inf, huge, denormal, ties) with
// every option, validated as brisk_sampler_create validates them.
// Input: [temperature f32][top_k i32][top_p f32][min_p f32][repeat_penalty f32]
// [repeat_last_n i32][seed u64][mode u8][n_accept u8][n_accept x i32 tokens]
// then the logits: mode & 1 -> raw f32 values; else one byte each, mapped
// through a table of special values. Four tokens are drawn, each accepted.
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "fuzz_util.h"
#include "sample/sampler.h"

namespace {

template <class T>
T take(const uint8_t*& p, size_t& n) {
  T v{};
  const size_t k = std::min(sizeof v, n);
  std::memcpy(&v, p, k);
  p += k;
  n -= k;
  return v;
}

float special(uint8_t b) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  static const float table[] = {std::numeric_limits<float>::quiet_NaN(), inf, -inf, FLT_MAX, -FLT_MAX,
                                std::numeric_limits<float>::denorm_min(), -std::numeric_limits<float>::denorm_min(),
                                FLT_MIN, 0.0f, -0.0f, 1e30f, -1e30f, 88.7f, -88.7f, 1e-30f, 100.0f};
  if (b < 16) return table[b];
  return (static_cast<float>(b) - 136.0f) / 8.0f;  // ordinary logits, many ties
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace brisk;
  SamplerParams p;
  p.temperature = take<float>(data, size);
  p.top_k = take<int32_t>(data, size);
  p.top_p = take<float>(data, size);
  p.min_p = take<float>(data, size);
  p.repeat_penalty = take<float>(data, size);
  p.repeat_last_n = take<int32_t>(data, size);
  p.seed = take<uint64_t>(data, size);
  const uint8_t mode = take<uint8_t>(data, size);
  const uint8_t n_accept = take<uint8_t>(data, size);
  // What brisk_sampler_create refuses.
  if (!(p.repeat_penalty > 0) || std::isnan(p.top_p) || std::isnan(p.min_p) || std::isnan(p.temperature)) return 0;
  std::vector<int32_t> accepted;
  for (int i = 0; i < n_accept && size >= 4; ++i) accepted.push_back(take<int32_t>(data, size));
  std::vector<float> logits;
  if (mode & 1) {
    logits.resize(size / 4);
    if (!logits.empty()) std::memcpy(logits.data(), data, logits.size() * 4);
  } else {
    for (size_t i = 0; i < size; ++i) logits.push_back(special(data[i]));
  }
  if (logits.empty()) return 0;
  const int n_vocab = static_cast<int>(logits.size());
  fuzz::expect_clean([&] {
    Sampler s(p);
    for (int32_t t : accepted) s.accept(t);
    for (int i = 0; i < 4; ++i) {
      const int32_t t = s.sample(logits.data(), n_vocab);
      if (t < 0 || t >= n_vocab) fuzz::finding("sampler gave an id out of range");
      s.accept(t);
    }
  });
  return 0;
}
