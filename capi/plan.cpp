// brisk_engine_max_sequences: how many sequences fit the memory plan, asked
// before creating an engine (`brisk serve --parallel auto`).
#include "guard.h"
#include "handles.h"

using brisk::capi::guard;
using brisk::capi::require;

extern "C" {

brisk_status brisk_engine_max_sequences(const brisk_model* m, const brisk_engine_options* options,
                                        uint32_t* out_n_seq) {
  return guard([&] {
    require(out_n_seq, "out_n_seq");
    *out_n_seq = 0;
    require(m, "model");
    const brisk_engine_options o =
        brisk::capi::merge_options(options, [](brisk_engine_options* p) { brisk_engine_options_init(p); });
    if (o.n_ctx > (1u << 24) || o.n_threads > 4096 || o.n_batch == 0 || o.n_batch > (1u << 20) ||
        o.n_seq_max == 0 || o.n_seq_max > 65536)
      brisk::fail(BRISK_ERR_INVALID_ARGUMENT, "engine options out of range");
    const brisk::Model& model = brisk::require_weights(*m->model);
    brisk::EngineOptions eo;
    eo.n_ctx = static_cast<int>(o.n_ctx);
    eo.n_threads = static_cast<int>(o.n_threads);
    eo.n_batch = static_cast<int>(o.n_batch);
    if (o.cache_type_k != BRISK_TYPE_AUTO) eo.k_type = static_cast<brisk::TensorType>(o.cache_type_k);
    if (o.cache_type_v != BRISK_TYPE_AUTO) eo.v_type = static_cast<brisk::TensorType>(o.cache_type_v);
    eo.memory_budget = o.memory_budget;
    const int n_ctx = brisk::resolve_context(model, eo.n_ctx);
    // The same rule as the engine's creation check: the plan within the
    // available memory less 5% headroom. The plan grows with n, so bisect.
    auto fits = [&](uint32_t n) {
      eo.n_seq_max = static_cast<int>(n);
      const brisk::MemoryPlan p = brisk::plan_memory(model, eo, n_ctx);
      return p.available == 0 || p.total() <= p.available - p.available / 20;
    };
    uint32_t lo = 0, hi = o.n_seq_max;
    while (lo < hi) {
      const uint32_t mid = lo + (hi - lo + 1) / 2;
      if (fits(mid)) lo = mid;
      else hi = mid - 1;
    }
    *out_n_seq = lo;
  });
}

brisk_status brisk_sequence_truncate(brisk_sequence* s, uint32_t position) {
  return guard([&] {
    require(s, "sequence");
    if (position > (1u << 24)) brisk::fail(BRISK_ERR_INVALID_ARGUMENT, "position out of range");
    s->seq->truncate(static_cast<int>(position));
  });
}

}  // extern "C"
