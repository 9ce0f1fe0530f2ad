// SPDX-License-Identifier: MIT
// brisk_engine_max_sequences: how many sequences fit the memory plan, asked
// before creating an engine (`brisk serve --parallel auto`, `brisk batch`).
#include "engine/max_parallel.h"
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
    brisk::capi::checked(m, "model");
    const brisk_engine_options o =
        brisk::capi::merge_options(options, [](brisk_engine_options* p) { brisk_engine_options_init(p); });
    if (o.n_ctx > (1u << 24) || o.n_threads > 4096 || o.n_batch == 0 || o.n_batch > (1u << 20) ||
        o.n_seq_max == 0 || o.n_seq_max > 65536)
      brisk::fail(BRISK_ERR_INVALID_ARGUMENT, "engine options out of range");
    brisk::EngineOptions eo;
    eo.n_ctx = static_cast<int>(o.n_ctx);
    eo.n_threads = static_cast<int>(o.n_threads);
    eo.n_batch = static_cast<int>(o.n_batch);
    if (o.cache_type_k != BRISK_TYPE_AUTO) eo.k_type = static_cast<brisk::TensorType>(o.cache_type_k);
    if (o.cache_type_v != BRISK_TYPE_AUTO) eo.v_type = static_cast<brisk::TensorType>(o.cache_type_v);
    eo.memory_budget = o.memory_budget;
    *out_n_seq = static_cast<uint32_t>(
        brisk::max_parallel(brisk::require_weights(*m->model), eo, static_cast<int>(o.n_seq_max)));
  });
}

brisk_status brisk_sequence_truncate(brisk_sequence* s, uint32_t position) {
  return guard([&] {
    brisk::capi::checked_sequence(s);
    if (position > (1u << 24)) brisk::fail(BRISK_ERR_INVALID_ARGUMENT, "position out of range");
    s->seq->truncate(static_cast<int>(position));
  });
}

}  // extern "C"
