#include "calibration/eval.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "engine/session.h"

namespace brisk::calib {

namespace {
ThreadPoolOptions pool_options(const EvalOptions& o) {
  ThreadPoolOptions p;
  p.n_threads = o.n_threads;
  p.pin = false;  // long batch jobs beside other work: let the OS place threads
  return p;
}
int checked_ctx(const Model& m, int n_ctx) {
  if (m.vocab_only()) fail(BRISK_ERR_INVALID_ARGUMENT, "the model was opened for tokenizing only");
  if (n_ctx < 2 || n_ctx > (1 << 20)) fail(BRISK_ERR_INVALID_ARGUMENT, "context length must be 2 or more");
  return n_ctx;
}
}  // namespace

Evaluator::Evaluator(const Model& model, const EvalOptions& o)
    : model_(model),
      opt_(o),
      weights_(model.weights()),
      pool_(pool_options(o)),
      cache_(model.config(), 1, checked_ctx(model, o.n_ctx), o.cache_type.value_or(default_cache_type(model)),
             o.cache_type_v.value_or(o.cache_type.value_or(default_cache_type(model)))),
      fwd_(model.config(), weights_, o.n_ctx, o.n_ctx, pool_.size()) {}

const float* Evaluator::run(const int32_t* tokens, int n) {
  if (n <= 0 || n > opt_.n_ctx) fail(BRISK_ERR_INTERNAL, "evaluator: chunk of " + std::to_string(n) + " tokens");
  batch_.clear();
  for (int i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= model_.config().n_vocab)
      fail(BRISK_ERR_INVALID_ARGUMENT, "token id " + std::to_string(tokens[i]) + " is outside the vocabulary");
    batch_.add(tokens[i], i, 0, true);
  }
  if (!fwd_.run(batch_, cache_, pool_, opt_.abort, opt_.abort_ctx)) fail(BRISK_ERR_CANCELLED, "cancelled");
  return fwd_.logits(0);
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
