// SPDX-License-Identifier: MIT
// brisk_perplexity (PPL, KL divergence) and brisk_compare (greedy outputs of
// two models side by side) over calibration/.
#include <map>
#include <string>

#include "calibration/compare.h"
#include "calibration/ppl.h"
#include "guard.h"
#include "handles.h"

using brisk::capi::guard;
using brisk::capi::require;

struct brisk_ppl_result : brisk::capi::HandleHeader {
  brisk_ppl_result() : HandleHeader(brisk::capi::kMagicPplResult) {}
  std::map<std::string, double> values;
  std::string json;
};

struct brisk_compare_result : brisk::capi::HandleHeader {
  brisk_compare_result() : HandleHeader(brisk::capi::kMagicCompareResult) {}
  std::map<std::string, double> values;
  std::string json;
};

using brisk::capi::check_handle;
using brisk::capi::checked;
using brisk::capi::guard_void;

extern "C" {

static void fill_ppl_options(brisk_ppl_options* o) {
  if (!o) return;
  *o = brisk_ppl_options{};
  o->struct_size = sizeof(*o);
  o->chunking = BRISK_PPL_CHUNK_REPLACE_BOS;
  o->scoring = BRISK_PPL_SCORE_SECOND_HALF;
  o->max_chars = -1;
  o->cache_type_k = BRISK_TYPE_AUTO;
  o->cache_type_v = BRISK_TYPE_AUTO;
}

brisk_status brisk_perplexity(const brisk_model* model, const brisk_model* base, const char* text, size_t len,
                              const brisk_ppl_options* options, brisk_ppl_result** out) {
  return guard([&] {
    require(out, "out_result");
    *out = nullptr;
    checked(model, "model");
    if (base) checked(base, "base_model");
    if (len > 0) require(text, "text");
    const brisk_ppl_options o = brisk::capi::merge_options(options, [](brisk_ppl_options* p) { brisk_ppl_options_init(p); });
    if ((o.chunking != BRISK_PPL_CHUNK_REPLACE_BOS && o.chunking != BRISK_PPL_CHUNK_PREPEND_BOS) ||
        (o.scoring != BRISK_PPL_SCORE_SECOND_HALF && o.scoring != BRISK_PPL_SCORE_ALL) || o.n_threads > 4096 ||
        o.n_ctx > (1u << 20))
      brisk::fail(BRISK_ERR_INVALID_ARGUMENT, "perplexity options out of range");
    brisk::calib::PplOptions p;
    const int train = model->model->config().n_ctx_train;
    p.n_ctx = o.n_ctx ? static_cast<int>(o.n_ctx) : std::min(train > 0 ? train : 512, 512);
    p.max_chunks = static_cast<int>(o.max_chunks);
    p.chunking = o.chunking == BRISK_PPL_CHUNK_PREPEND_BOS ? brisk::calib::ChunkMode::prepend_bos
                                                          : brisk::calib::ChunkMode::replace_bos;
    p.scoring = o.scoring == BRISK_PPL_SCORE_ALL ? brisk::calib::ScoreMode::all : brisk::calib::ScoreMode::second_half;
    p.max_chars = o.max_chars;
    p.spread_chunks = o.spread_chunks != 0;
    if (o.base_cache) p.base_cache = o.base_cache;
    p.n_threads = static_cast<int>(o.n_threads);
    if (o.cache_type_k != BRISK_TYPE_AUTO) p.cache_type_k = static_cast<brisk::TensorType>(o.cache_type_k);
    if (o.cache_type_v != BRISK_TYPE_AUTO) p.cache_type_v = static_cast<brisk::TensorType>(o.cache_type_v);
    p.progress = [&o](uint64_t done, uint64_t total) {
      if (o.abort_fn && o.abort_fn(o.abort_user_data)) return false;
      return !(o.progress_fn && o.progress_fn(o.progress_user_data, "ppl", done, total, ""));
    };
    const brisk::calib::PplResult r = brisk::calib::perplexity(*model->model, base ? base->model.get() : nullptr,
                                                               std::string(text ? text : "", len), p);
    auto h = std::make_unique<brisk_ppl_result>();
    auto& v = h->values;
    v["ppl"] = r.ppl.value;
    v["ppl_error"] = r.ppl.error;
    v["mean_nll"] = r.mean_nll.value;
    v["mean_nll_error"] = r.mean_nll.error;
    v["chunks"] = r.n_chunks;
    v["scored_tokens"] = static_cast<double>(r.n_scored);
    v["text_tokens"] = static_cast<double>(r.n_text_tokens);
    if (r.has_base) {
      v["base_ppl"] = r.base_ppl.value;
      v["base_ppl_error"] = r.base_ppl.error;
      v["kld_mean"] = r.kld.value;
      v["kld_error"] = r.kld.error;
      v["kld_median"] = r.kld_median;
      v["kld_p99"] = r.kld_p99;
      v["kld_p99.9"] = r.kld_p999;
      v["kld_max"] = r.kld_max;
      v["same_top_pct"] = r.same_top_pct.value;
      v["same_top_error"] = r.same_top_pct.error;
      v["delta_ppl"] = r.delta_ppl.value;
      v["delta_ppl_error"] = r.delta_ppl.error;
      v["ln_ppl_ratio"] = r.ln_ppl_ratio.value;
      v["ln_ppl_ratio_error"] = r.ln_ppl_ratio.error;
    }
    h->json = brisk::calib::ppl_json(r, model->model->file().path(), base ? base->model->file().path() : p.base_cache, "", p);
    *out = h.release();
  });
}

brisk_status brisk_ppl_result_value(const brisk_ppl_result* r, const char* key, double* out) {
  return guard([&] {
    check_handle(r, brisk::capi::kMagicPplResult, "result");
    require(key, "key");
    require(out, "out_value");
    auto it = r->values.find(key);
    if (it == r->values.end()) brisk::fail(BRISK_ERR_NOT_FOUND, std::string("no figure '") + key + "' in this result");
    *out = it->second;
  });
}

brisk_status brisk_ppl_result_json(const brisk_ppl_result* r, char* buf, size_t cap, size_t* needed) {
  return guard([&] {
    check_handle(r, brisk::capi::kMagicPplResult, "result");
    brisk::capi::copy_text_out(r->json, buf, cap, needed);
  });
}

void brisk_ppl_result_free(brisk_ppl_result* r) {
  guard_void([&] {
    if (!r) return;
    check_handle(r, brisk::capi::kMagicPplResult, "result");
    r->values.clear();
    r->json = std::string();
    brisk::capi::retire(r);
  });
}

static void fill_compare_options(brisk_compare_options* o) {
  if (!o) return;
  *o = brisk_compare_options{};
  o->struct_size = sizeof(*o);
  o->n_predict = 64;
  o->stop_at_eos = 1;
}

brisk_status brisk_compare(const brisk_model* a, const brisk_model* b, const char* const* prompts, size_t n,
                           const brisk_compare_options* options, brisk_compare_result** out) {
  return guard([&] {
    require(out, "out_result");
    *out = nullptr;
    checked(a, "model_a");
    checked(b, "model_b");
    if (n > 0) require(prompts, "prompts");
    const brisk_compare_options o = brisk::capi::merge_options(options, [](brisk_compare_options* p) { brisk_compare_options_init(p); });
    if (o.n_predict < 0 || o.n_threads > 4096 || o.n_ctx > (1u << 24))
      brisk::fail(BRISK_ERR_INVALID_ARGUMENT, "compare options out of range");
    std::vector<std::string> ps;
    for (size_t i = 0; i < n; ++i) {
      require(prompts[i], "prompts[i]");
      ps.emplace_back(prompts[i]);
    }
    brisk::calib::CompareOptions c;
    c.n_predict = o.n_predict;
    c.n_ctx = static_cast<int>(o.n_ctx);
    c.n_threads = static_cast<int>(o.n_threads);
    c.stop_at_eos = o.stop_at_eos != 0;
    c.progress = [&o](uint64_t done, uint64_t total) {
      if (o.abort_fn && o.abort_fn(o.abort_user_data)) return false;
      return !(o.progress_fn && o.progress_fn(o.progress_user_data, "compare", done, total, ""));
    };
    const brisk::calib::CompareResult r = brisk::calib::compare_models(*a->model, *b->model, ps, c);
    auto h = std::make_unique<brisk_compare_result>();
    h->values["prompts"] = static_cast<double>(r.prompts.size());
    h->values["identical_pct"] = r.identical_pct;
    h->values["diverging"] = r.n_diverging;
    h->values["mean_first_divergence_token"] = r.mean_first_divergence_token;
    h->json = brisk::calib::compare_json(r, a->model->file().path(), b->model->file().path());
    *out = h.release();
  });
}

brisk_status brisk_compare_result_value(const brisk_compare_result* r, const char* key, double* out) {
  return guard([&] {
    check_handle(r, brisk::capi::kMagicCompareResult, "result");
    require(key, "key");
    require(out, "out_value");
    auto it = r->values.find(key);
    if (it == r->values.end()) brisk::fail(BRISK_ERR_NOT_FOUND, std::string("no figure '") + key + "' in this result");
    *out = it->second;
  });
}

brisk_status brisk_compare_result_json(const brisk_compare_result* r, char* buf, size_t cap, size_t* needed) {
  return guard([&] {
    check_handle(r, brisk::capi::kMagicCompareResult, "result");
    brisk::capi::copy_text_out(r->json, buf, cap, needed);
  });
}

void brisk_compare_result_free(brisk_compare_result* r) {
  guard_void([&] {
    if (!r) return;
    check_handle(r, brisk::capi::kMagicCompareResult, "result");
    r->values.clear();
    r->json = std::string();
    brisk::capi::retire(r);
  });
}

}  // extern "C"

extern "C" {
void brisk_ppl_options_init_sized(brisk_ppl_options* o, size_t size) {
  brisk::capi::init_sized(o, size, fill_ppl_options);
}
void brisk_compare_options_init_sized(brisk_compare_options* o, size_t size) {
  brisk::capi::init_sized(o, size, fill_compare_options);
}
}  // extern "C"
