// SPDX-License-Identifier: MIT
#include "calibration/ppl.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>

#include "calibration/data.h"
#include "calibration/eval.h"
#include "core/atomic_file.h"
#include "core/error.h"

namespace brisk::calib {

namespace {

// mean and standard error of the mean from running sums (llama.cpp's
// mean_and_uncertainty).
ValueWithError mean_err(double sum, double sum2, uint64_t n) {
  ValueWithError r;
  if (n == 0) return r;
  r.value = sum / n;
  const double var = sum2 / n - r.value * r.value;
  r.error = n > 1 && var > 0 ? std::sqrt(var / (n - 1)) : 0.0;
  return r;
}

double quantile(const std::vector<float>& sorted, double p) {
  if (sorted.empty()) return 0;
  return sorted[static_cast<size_t>(std::llround(p * (sorted.size() - 1)))];
}

int argmax(const float* x, int n) { return static_cast<int>(std::max_element(x, x + n) - x); }

// The cache file: a header naming exactly what was evaluated, then the base
// model's log-probabilities (float32) of every scored position in order.
struct CacheHeader {
  char magic[8] = {'B', 'R', 'K', 'B', 'A', 'S', 'E', '1'};
  uint32_t n_vocab = 0, n_chunks = 0, first = 0, n_ctx = 0;
  uint64_t tokens_hash = 0;
};

uint64_t tokens_hash(const std::vector<std::vector<int32_t>>& chunks) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the token ids
  for (const auto& c : chunks)
    for (int32_t t : c)
      for (int b = 0; b < 4; ++b) h = (h ^ ((static_cast<uint32_t>(t) >> (8 * b)) & 0xff)) * 1099511628211ull;
  return h;
}

class BaseCache {
 public:
  BaseCache(const std::string& path, bool write, const CacheHeader& want) : path_(path), write_(write) {
    if (write) {
      out_ = std::make_unique<AtomicFile>(path);
    } else {
      f_ = std::fopen(path.c_str(), "rb");
      if (!f_) fail(BRISK_ERR_NOT_FOUND, "cannot open base cache '" + path + "'");
    }
    CacheHeader h = want;
    if (write) {
      io(&h, sizeof h);
    } else {
      io(&h, sizeof h);
      if (std::memcmp(h.magic, want.magic, 8) != 0 || h.n_vocab != want.n_vocab || h.n_chunks != want.n_chunks ||
          h.first != want.first || h.n_ctx != want.n_ctx || h.tokens_hash != want.tokens_hash)
        fail(BRISK_ERR_INVALID_ARGUMENT, "base cache '" + path + "' was made for other text, chunks or vocabulary");
    }
  }
  ~BaseCache() {
    if (f_) std::fclose(f_);
  }
  void io(void* p, size_t n) {
    if (write_) {
      out_->write(p, n);
      return;
    }
    if (std::fread(p, 1, n, f_) != n) fail(BRISK_ERR_IO, "base cache '" + path_ + "' is truncated");
  }
  void commit() {
    if (write_) out_->commit();
  }

 private:
  std::string path_;
  bool write_;
  FILE* f_ = nullptr;
  std::unique_ptr<AtomicFile> out_;  // writing: a temporary renamed into place by commit()
};

// The evaluated model's options (its cache types; planned beside the base's
// evaluator, if any) or the base's (default cache, base_plan nullptr).
EvalOptions eval_options(const PplOptions& o, bool evaluated, const MemoryPlan* base_plan) {
  EvalOptions eo;
  eo.n_ctx = o.n_ctx;
  eo.n_threads = o.n_threads;
  if (evaluated) {
    eo.cache_type = o.cache_type_k;
    eo.cache_type_v = o.cache_type_v;
  }
  if (base_plan) eo.memory_reserved = base_plan->total() - base_plan->reserved;
  return eo;
}

}  // namespace

PplResult perplexity_chunks(const Model& model, const Model* base, const std::vector<std::vector<int32_t>>& chunks,
                            int first, const PplOptions& o) {
  const int n_vocab = model.config().n_vocab;
  if (base && base->config().n_vocab != n_vocab)
    fail(BRISK_ERR_INVALID_ARGUMENT, "the base model has another vocabulary size (" +
                                         std::to_string(base->config().n_vocab) + " vs " + std::to_string(n_vocab) + ")");
  PplResult r;
  r.n_ctx = o.n_ctx;
  std::unique_ptr<BaseCache> cache;
  if (!o.base_cache.empty()) {
    CacheHeader h;
    h.n_vocab = static_cast<uint32_t>(n_vocab);
    h.n_chunks = static_cast<uint32_t>(chunks.size());
    h.first = static_cast<uint32_t>(first);
    h.n_ctx = static_cast<uint32_t>(o.n_ctx);
    h.tokens_hash = tokens_hash(chunks);
    cache = std::make_unique<BaseCache>(o.base_cache, base != nullptr, h);
  }
  const bool from_cache = cache && !base;
  r.has_base = base != nullptr || from_cache;
  std::unique_ptr<Evaluator> ev_base;
  if (base) ev_base = std::make_unique<Evaluator>(*base, eval_options(o, false, nullptr));
  // Both evaluators live at once: the second plans with the first's share.
  Evaluator ev(model, eval_options(o, true, ev_base ? &ev_base->memory_plan() : nullptr));

  std::vector<float> lp(n_vocab), lpb(n_vocab), base_rows;
  double s_nll = 0, s_nll2 = 0, s_b = 0, s_b2 = 0, s_cross = 0, s_kl = 0, s_kl2 = 0, s_d = 0, s_d2 = 0;
  uint64_t same = 0;
  std::vector<float> kls;
  for (size_t c = 0; c < chunks.size(); ++c) {
    if (o.progress && !o.progress(c, chunks.size())) fail(BRISK_ERR_CANCELLED, "perplexity cancelled");
    const std::vector<int32_t>& ch = chunks[c];
    const int n = static_cast<int>(ch.size());
    if (base) {
      const float* lb = ev_base->run(ch.data(), n);
      base_rows.assign(lb, lb + static_cast<size_t>(n) * n_vocab);
    }
    if (from_cache) {
      base_rows.resize(static_cast<size_t>(n) * n_vocab);
      for (int j = first; j < n - 1; ++j) cache->io(base_rows.data() + static_cast<size_t>(j) * n_vocab, sizeof(float) * n_vocab);
    }
    const float* logits = ev.run(ch.data(), n);
    double chunk_sum = 0;
    for (int j = first; j < n - 1; ++j) {
      const float* row = logits + static_cast<size_t>(j) * n_vocab;
      log_softmax(row, n_vocab, lp.data());
      const double nll = -lp[ch[j + 1]];
      chunk_sum += nll;
      s_nll += nll;
      s_nll2 += nll * nll;
      if (r.has_base) {
        const float* brow = base_rows.data() + static_cast<size_t>(j) * n_vocab;
        // Cached rows are log-probabilities already (log_softmax is idempotent).
        log_softmax(brow, n_vocab, lpb.data());
        if (cache && base) cache->io(lpb.data(), sizeof(float) * n_vocab);
        const double nb = -lpb[ch[j + 1]];
        s_b += nb;
        s_b2 += nb * nb;
        s_cross += nll * nb;
        s_d += nll - nb;
        s_d2 += (nll - nb) * (nll - nb);
        double kl = 0;
        for (int v = 0; v < n_vocab; ++v) kl += std::exp(static_cast<double>(lpb[v])) * (lpb[v] - lp[v]);
        kl = std::max(kl, 0.0);
        s_kl += kl;
        s_kl2 += kl * kl;
        kls.push_back(static_cast<float>(kl));
        same += argmax(row, n_vocab) == argmax(brow, n_vocab);
      }
      ++r.n_scored;
    }
    r.chunk_nll_sums.push_back(chunk_sum);
  }
  if (o.progress) o.progress(chunks.size(), chunks.size());
  r.n_chunks = static_cast<int>(chunks.size());
  const uint64_t n = r.n_scored;
  if (n == 0) fail(BRISK_ERR_INVALID_ARGUMENT, "the text is too short for one chunk of " + std::to_string(o.n_ctx) + " tokens");
  if (cache) cache->commit();
  r.mean_nll = mean_err(s_nll, s_nll2, n);
  r.ppl = {std::exp(r.mean_nll.value), std::exp(r.mean_nll.value) * r.mean_nll.error};
  if (r.has_base) {
    const ValueWithError b = mean_err(s_b, s_b2, n);
    r.base_ppl = {std::exp(b.value), std::exp(b.value) * b.error};
    r.kld = mean_err(s_kl, s_kl2, n);
    std::sort(kls.begin(), kls.end());
    r.kld_median = quantile(kls, 0.5);
    r.kld_p99 = quantile(kls, 0.99);
    r.kld_p999 = quantile(kls, 0.999);
    r.kld_max = kls.back();
    const double p = static_cast<double>(same) / n;
    r.same_top_pct = {100.0 * p, n > 1 ? 100.0 * std::sqrt(p * (1 - p) / (n - 1)) : 0.0};
    r.ln_ppl_ratio = mean_err(s_d, s_d2, n);
    // Delta method with the covariance of the two means (they are measured
    // on the same positions, so their errors largely cancel).
    const double cov = (s_cross / n - r.mean_nll.value * b.value) / std::max<double>(1, n - 1);
    const double pq = r.ppl.value, pb = r.base_ppl.value;
    const double var = pq * pq * r.mean_nll.error * r.mean_nll.error + pb * pb * b.error * b.error - 2 * pq * pb * cov;
    r.delta_ppl = {pq - pb, std::sqrt(std::max(0.0, var))};
    if (o.keep_kld_values) r.kld_values = std::move(kls);
  }
  return r;
}

PplResult perplexity(const Model& model, const Model* base, const std::string& full_text, const PplOptions& o) {
  if (o.n_ctx < 4) fail(BRISK_ERR_INVALID_ARGUMENT, "context must be at least 4 tokens");
  // Refuse a configuration that cannot fit before reading the text.
  if (base) {
    const MemoryPlan base_plan = Evaluator::check_memory(*base, eval_options(o, false, nullptr));
    Evaluator::check_memory(model, eval_options(o, true, &base_plan));
  } else {
    Evaluator::check_memory(model, eval_options(o, true, nullptr));
  }
  const std::string text = first_chars(full_text, o.max_chars);
  const Tokenizer& tok = model.tokenizer();
  const int32_t bos = tok.bos();
  if (bos < 0) fail(BRISK_ERR_UNSUPPORTED, "the model has no BOS token, which the protocol needs");
  std::vector<std::vector<int32_t>> chunks;
  uint64_t n_text = 0;
  if (o.chunking == ChunkMode::replace_bos) {
    std::vector<int32_t> ids = tok.encode(text, true, false);
    if (ids.empty() || ids[0] != bos) ids.insert(ids.begin(), bos);
    n_text = ids.size();
    for (size_t s = 0; s + o.n_ctx <= ids.size(); s += o.n_ctx) {
      chunks.emplace_back(ids.begin() + s, ids.begin() + s + o.n_ctx);
      chunks.back()[0] = bos;
    }
  } else {
    const std::vector<int32_t> ids = tok.encode(text, false, false);
    n_text = ids.size();
    const size_t len = static_cast<size_t>(o.n_ctx - 1);
    for (size_t s = 0; s + len <= ids.size(); s += len) {
      chunks.emplace_back();
      chunks.back().push_back(bos);
      chunks.back().insert(chunks.back().end(), ids.begin() + s, ids.begin() + s + len);
    }
  }
  if (o.max_chunks > 0 && chunks.size() > static_cast<size_t>(o.max_chunks)) {
    if (o.spread_chunks) {
      std::vector<std::vector<int32_t>> picked;
      const size_t n = chunks.size(), k = static_cast<size_t>(o.max_chunks);
      for (size_t i = 0; i < k; ++i) picked.push_back(std::move(chunks[(i * n + n / 2) / k]));
      chunks = std::move(picked);
    } else {
      chunks.resize(o.max_chunks);
    }
  }
  const int first = o.scoring == ScoreMode::all ? 0 : o.n_ctx / 2;
  PplResult r = perplexity_chunks(model, base, chunks, first, o);
  r.n_text_tokens = n_text;
  return r;
}

std::string ppl_json(const PplResult& r, const std::string& model_path, const std::string& base_path,
                     const std::string& text_path, const PplOptions& o) {
  using nlohmann::json;
  auto ve = [](const ValueWithError& v) { return json{{"value", v.value}, {"error", v.error}}; };
  json j;
  j["model"] = model_path;
  j["text"] = text_path;
  j["protocol"] = {{"ctx", o.n_ctx},
                   {"chunking", o.chunking == ChunkMode::replace_bos ? "replace-bos" : "prepend-bos"},
                   {"score", o.scoring == ScoreMode::all ? "all" : "second-half"},
                   {"chars", o.max_chars},
                   {"max_chunks", o.max_chunks},
                   {"spread_chunks", o.spread_chunks}};
  j["text_tokens"] = r.n_text_tokens;
  j["chunks"] = r.n_chunks;
  j["scored_tokens"] = r.n_scored;
  j["mean_nll"] = ve(r.mean_nll);
  j["ppl"] = ve(r.ppl);
  j["chunk_nll_sums"] = r.chunk_nll_sums;
  if (r.has_base) {
    j["base"] = base_path;
    j["base_ppl"] = ve(r.base_ppl);
    j["kld"] = {{"mean", r.kld.value}, {"error", r.kld.error},  {"median", r.kld_median},
                {"p99", r.kld_p99},    {"p99.9", r.kld_p999},   {"max", r.kld_max}};
    j["same_top_pct"] = ve(r.same_top_pct);
    j["ln_ppl_ratio"] = ve(r.ln_ppl_ratio);
    j["delta_ppl"] = ve(r.delta_ppl);
  }
  return j.dump(1);
}

}  // namespace brisk::calib
