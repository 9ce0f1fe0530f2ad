// SPDX-License-Identifier: MIT
#include "calibration/eval.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace brisk::calib {

namespace {
int checked_ctx(const Model& m, int n_ctx) {
  if (m.vocab_only()) fail(BRISK_ERR_INVALID_ARGUMENT, "the model was opened for tokenizing only");
  if (n_ctx < 2 || n_ctx > (1 << 24))
    fail(BRISK_ERR_INVALID_ARGUMENT, "context length must be between 2 and " + std::to_string(1 << 24));
  return n_ctx;
}

EngineOptions engine_options(const Model& model, const EvalOptions& o) {
  EngineOptions e;
  e.n_ctx = checked_ctx(model, o.n_ctx);
  e.n_seq_max = 1;
  e.n_threads = o.n_threads;
  e.n_batch = o.n_ctx;  // a chunk in one forward pass
  const TensorType k = o.cache_type.value_or(default_cache_type(model));
  e.k_type = k;
  e.v_type = o.cache_type_v.value_or(k);
  e.pin_threads = false;  // long batch jobs beside other work: let the OS place threads
  e.abort = o.abort;
  e.abort_ctx = o.abort_ctx;
  e.memory_reserved = o.memory_reserved;
  e.kept_logits_rows = static_cast<uint64_t>(o.n_ctx);
  return e;
}

}  // namespace

MemoryPlan Evaluator::check_memory(const Model& model, const EvalOptions& o) {
  return check_engine_memory(model, engine_options(model, o));
}

Evaluator::Evaluator(const Model& model, const EvalOptions& o) : model_(model), opt_(o), weights_(model.weights()) {
  EngineOptions e = engine_options(model, o);
  e.weights = &weights_;
  engine_ = std::make_unique<Engine>(model, e);  // plans (and may refuse) before rows_ is allocated
  seq_ = engine_->create_sequence();
  seq_->set_persistent(true);
  rows_.resize(static_cast<size_t>(o.n_ctx) * static_cast<size_t>(model.config().n_vocab));
}

const float* Evaluator::run(const int32_t* tokens, int n) {
  if (n <= 0 || n > opt_.n_ctx) fail(BRISK_ERR_INTERNAL, "evaluator: chunk of " + std::to_string(n) + " tokens");
  seq_->truncate(0);
  seq_->add_tokens(tokens, static_cast<size_t>(n), rows_.data());
  try {
    engine_->run_until_idle();
  } catch (...) {
    seq_->rollback(0);
    throw;
  }
  return rows_.data();
}

void log_softmax(const float* x, int n, float* out) {
  float mx = x[0];
  for (int i = 1; i < n; ++i) mx = std::max(mx, x[i]);
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += std::exp(static_cast<double>(x[i]) - mx);
  const float lse = mx + static_cast<float>(std::log(sum));
  for (int i = 0; i < n; ++i) out[i] = x[i] - lse;
}

}  // namespace brisk::calib
