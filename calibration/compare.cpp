// SPDX-License-Identifier: MIT
#include "calibration/compare.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "engine/session.h"

namespace brisk::calib {

namespace {

struct Generated {
  std::vector<int32_t> tokens;
  std::string text;
};

Generated greedy(const Model& m, const std::string& prompt, const CompareOptions& o) {
  SessionOptions so;
  const int train = m.config().n_ctx_train;
  so.n_ctx = o.n_ctx > 0 ? o.n_ctx : std::min(train > 0 ? train : 4096, 4096);
  so.n_threads = o.n_threads;
  so.pin_threads = false;
  Session s(m, so);
  std::vector<int32_t> ids = m.tokenizer().encode(prompt, true, false);
  if (ids.empty()) fail(BRISK_ERR_INVALID_ARGUMENT, "an empty prompt and no BOS token");
  if (static_cast<int>(ids.size()) >= s.n_ctx()) fail(BRISK_ERR_CONTEXT_FULL, "a prompt does not fit the context");
  s.eval(ids.data(), ids.size());
  SamplerParams p;
  p.temperature = 0;
  Sampler sampler(p);
  Generated g;
  s.generate(sampler, o.n_predict, o.stop_at_eos,
             [&](int32_t t, const std::string& text) {
               if (t >= 0) g.tokens.push_back(t);
               g.text += text;
               return true;
             },
             nullptr);
  return g;
}

int utf8_chars(const std::string& s, size_t bytes) {
  int n = 0;
  for (size_t i = 0; i < bytes && i < s.size(); ++i) n += (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
  return n;
}

}  // namespace

CompareResult compare_models(const Model& a, const Model& b, const std::vector<std::string>& prompts,
                             const CompareOptions& o) {
  CompareResult r;
  double sum_div = 0;
  int n_same = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (o.progress && !o.progress(i, prompts.size())) fail(BRISK_ERR_CANCELLED, "comparison cancelled");
    PromptComparison c;
    c.prompt = prompts[i];
    Generated ga = greedy(a, c.prompt, o), gb = greedy(b, c.prompt, o);
    c.tokens_a = std::move(ga.tokens);
    c.tokens_b = std::move(gb.tokens);
    c.text_a = std::move(ga.text);
    c.text_b = std::move(gb.text);
    c.identical = c.tokens_a == c.tokens_b;
    if (!c.identical) {
      const size_t n = std::min(c.tokens_a.size(), c.tokens_b.size());
      size_t k = 0;
      while (k < n && c.tokens_a[k] == c.tokens_b[k]) ++k;
      c.first_divergence_token = static_cast<int>(k);
      size_t byte = 0;
      while (byte < c.text_a.size() && byte < c.text_b.size() && c.text_a[byte] == c.text_b[byte]) ++byte;
      // Back up to the start of a character split by the byte comparison.
      while (byte > 0 && byte < c.text_a.size() && (static_cast<unsigned char>(c.text_a[byte]) & 0xC0) == 0x80) --byte;
      c.first_divergence_char = utf8_chars(c.text_a, byte);
      sum_div += static_cast<double>(k);
      ++r.n_diverging;
    } else {
      ++n_same;
    }
    r.prompts.push_back(std::move(c));
  }
  if (o.progress) o.progress(prompts.size(), prompts.size());
  r.identical_pct = prompts.empty() ? 0 : 100.0 * n_same / prompts.size();
  r.mean_first_divergence_token = r.n_diverging ? sum_div / r.n_diverging : 0;
  return r;
}

std::string compare_json(const CompareResult& r, const std::string& a_path, const std::string& b_path) {
  using nlohmann::json;
  json j;
  j["model_a"] = a_path;
  j["model_b"] = b_path;
  j["prompts_total"] = r.prompts.size();
  j["identical_pct"] = r.identical_pct;
  j["diverging"] = r.n_diverging;
  j["mean_first_divergence_token"] = r.mean_first_divergence_token;
  json ps = json::array();
  for (const PromptComparison& c : r.prompts)
    ps.push_back({{"prompt", c.prompt},
                  {"identical", c.identical},
                  {"first_divergence_token", c.first_divergence_token},
                  {"first_divergence_char", c.first_divergence_char},
                  {"text_a", c.text_a},
                  {"text_b", c.text_b},
                  {"tokens_a", c.tokens_a},
                  {"tokens_b", c.tokens_b}});
  j["prompts"] = ps;
  // Invalid UTF-8 in generated text must not make the dump throw.
  return j.dump(1, ' ', false, json::error_handler_t::replace);
}

}  // namespace brisk::calib
