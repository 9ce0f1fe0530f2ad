// brisk_model_identity and brisk_engine_max_parallel: what `brisk batch`
// needs to tie its output to a model and to size its engine.
#include "engine/max_parallel.h"
#include "guard.h"
#include "handles.h"
#include "model/identity.h"

using brisk::capi::copy_text_out;
using brisk::capi::guard;
using brisk::capi::require;

extern "C" {

brisk_status brisk_model_identity(const brisk_model* m, char* buf, size_t cap, size_t* needed) {
  return guard([&] {
    require(m, "model");
    copy_text_out(brisk::model_identity(m->model->file()), buf, cap, needed);
  });
}

brisk_status brisk_engine_max_parallel(const brisk_model* m, const brisk_engine_options* options, uint32_t cap,
                                       uint32_t* out_n) {
  return guard([&] {
    require(out_n, "out_n");
    *out_n = 0;
    require(m, "model");
    const brisk_engine_options o =
        brisk::capi::merge_options(options, [](brisk_engine_options* p) { brisk_engine_options_init(p); });
    if (o.n_ctx > (1u << 24) || o.n_threads > 4096 || o.n_batch == 0 || o.n_batch > (1u << 20))
      brisk::fail(BRISK_ERR_INVALID_ARGUMENT, "engine options out of range");
    brisk::EngineOptions eo;
    eo.n_ctx = static_cast<int>(o.n_ctx);
    eo.n_threads = static_cast<int>(o.n_threads);
    eo.n_batch = static_cast<int>(o.n_batch);
    if (o.cache_type_k != BRISK_TYPE_AUTO) eo.k_type = static_cast<brisk::TensorType>(o.cache_type_k);
    if (o.cache_type_v != BRISK_TYPE_AUTO) eo.v_type = static_cast<brisk::TensorType>(o.cache_type_v);
    eo.memory_budget = o.memory_budget;
    const uint32_t limit = cap == 0 || cap > 65536 ? 65536 : cap;
    *out_n = static_cast<uint32_t>(brisk::max_parallel(brisk::require_weights(*m->model), eo, static_cast<int>(limit)));
  });
}

}  // extern "C"
