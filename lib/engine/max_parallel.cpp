// SPDX-License-Identifier: MIT
#include "engine/max_parallel.h"

namespace brisk {

namespace {

bool fits(const Model& model, EngineOptions& o, int n_ctx, int n) {
  o.n_seq_max = n;
  const MemoryPlan p = plan_engine_memory(model, o, n_ctx);
  return p.total() <= p.available - p.available / 20;  // the headroom Engine keeps
}

}  // namespace

int max_parallel(const Model& model, EngineOptions options, int cap) {
  const int n_ctx = resolve_context(model, options.n_ctx);
  if (options.memory_budget == 0) {
    // Read the machine's figure once so the search compares like with like.
    options.n_seq_max = 1;
    options.memory_budget = plan_engine_memory(model, options, n_ctx).available;
  }
  if (cap < 1 || !fits(model, options, n_ctx, 1)) return 0;
  int lo = 1, hi = cap;  // lo fits; find the largest that does
  while (lo < hi) {
    const int mid = lo + (hi - lo + 1) / 2;
    if (fits(model, options, n_ctx, mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

}  // namespace brisk
