// SPDX-License-Identifier: MIT
#include "engine/session.h"

#include "core/error.h"

namespace brisk {

namespace {

EngineOptions engine_options(const SessionOptions& o) {
  if (o.n_batch <= 0) fail(BRISK_ERR_INVALID_ARGUMENT, "batch size must be positive");
  EngineOptions e;
  e.n_ctx = o.n_ctx;
  e.n_seq_max = 1;
  e.n_threads = o.n_threads;
  e.n_batch = o.n_batch;
  e.k_type = o.k_type;
  e.v_type = o.v_type;
  e.pin_threads = o.pin_threads;
  e.pin_caller = o.pin_caller;
  e.abort = o.abort;
  e.abort_ctx = o.abort_ctx;
  e.memory_budget = o.memory_budget;
  return e;
}

}  // namespace

Session::Session(const Model& model, const SessionOptions& options)
    : engine_(model, engine_options(options)), seq_(engine_.create_sequence()) {
  seq_->set_persistent(true);
}

void Session::eval(const int32_t* tokens, size_t n, float* all_logits) {
  if (n == 0) return;
  const int start = seq_->position();
  seq_->add_tokens(tokens, n, all_logits);
  try {
    engine_.run_until_idle();
  } catch (...) {
    seq_->rollback(start);
    throw;
  }
}

StopReason Session::generate(Sampler& sampler, int max_tokens, bool stop_at_eos, const TokenCallback& on_token,
                             size_t* n_generated) {
  if (n_generated) *n_generated = 0;
  if (seq_->logits().empty()) fail(BRISK_ERR_INVALID_ARGUMENT, "nothing evaluated yet: evaluate a prompt first");
  seq_->generate(sampler, max_tokens, stop_at_eos, on_token);
  try {
    engine_.run_until_idle();
  } catch (...) {
    if (n_generated) *n_generated = seq_->generated().size();
    seq_->rollback(-1);
    throw;
  }
  if (n_generated) *n_generated = seq_->generated().size();
  return seq_->stop_reason();
}

}  // namespace brisk
