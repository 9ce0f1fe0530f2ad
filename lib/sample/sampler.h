// SPDX-License-Identifier: MIT
// Turning logits into the next token: repetition penalty, then temperature,
// top-k, top-p and min-p filtering, then a seeded draw. Temperature <= 0 is
// greedy (argmax) and ignores the filters.
#pragma once
#include <cstdint>
#include <deque>
#include <random>
#include <vector>

namespace brisk {

struct SamplerParams {
  float temperature = 0.8f;
  int top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.05f;
  float repeat_penalty = 1.0f;  // off, as llama.cpp defaults
  int repeat_last_n = 64;
  uint64_t seed = 0;
  // OpenAI-style penalties over the same recent window: a token's logit is
  // lowered by presence (once seen) + frequency x its count. 0: off.
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
};

class Sampler {
 public:
  explicit Sampler(const SamplerParams& params);

  // Throws brisk::Error(BRISK_ERR_BAD_FORMAT) naming the token when a logit is
  // NaN or +Inf (a model with corrupt weights), or when every logit is -Inf.
  int32_t sample(const float* logits, int n_vocab);
  // Records a token of the context for the repetition penalty.
  void accept(int32_t token);
  // Forgets the recorded context (the random state stays).
  void clear_history() { recent_.clear(); }
  void reset();
  const SamplerParams& params() const { return p_; }

 private:
  friend struct SeqStateAccess;  // engine/seq_state.cpp saves and restores it
  SamplerParams p_;
  std::mt19937_64 rng_;
  std::deque<int32_t> recent_;
  std::vector<std::pair<float, int32_t>> cand_;  // reused between calls
  std::vector<float> logit_, prob_;               // likewise
};

}  // namespace brisk
