// SPDX-License-Identifier: MIT
#include "engine/engine.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace brisk {

namespace {

// Refuses a configuration that does not fit, naming the numbers and what would.
MemoryPlan checked_plan(const Model& model, const EngineOptions& o, int n_ctx) {
  if (o.n_seq_max <= 0) fail(BRISK_ERR_INVALID_ARGUMENT, "at least one sequence slot is needed");
  if (o.n_batch <= 0) fail(BRISK_ERR_INVALID_ARGUMENT, "batch size must be positive");
  MemoryPlan p = plan_engine_memory(model, o, n_ctx);
  MemoryRequest r;
  r.n_ctx = n_ctx;
  r.n_seq = o.n_seq_max;
  r.k_type = o.k_type.value_or(default_cache_type(model));
  r.v_type = o.v_type.value_or(default_cache_type(model));
  r.extra_logits_rows = o.kept_logits_rows;
  std::string what = o.n_seq_max > 1 ? std::to_string(o.n_seq_max) + " sequences x " + std::to_string(n_ctx) + " context"
                                     : "a context of " + std::to_string(n_ctx) + " tokens";
  if (o.kept_logits_rows) what += " with the logits of " + std::to_string(o.kept_logits_rows) + " positions";
  require_fits(p, r, what);
  return p;
}

// The forward pass's batch rows: the step budget, at least one per slot.
int forward_rows(const EngineOptions& o, int n_ctx) {
  const int64_t cap = static_cast<int64_t>(n_ctx) * o.n_seq_max;
  return static_cast<int>(std::max<int64_t>(std::min<int64_t>(o.n_batch, cap), o.n_seq_max));
}

ThreadPoolOptions pool_options(const EngineOptions& o) {
  ThreadPoolOptions p;
  p.n_threads = o.n_threads;
  p.pin = o.pin_threads;
  p.pin_caller = o.pin_caller;
  p.cpu_list = o.cpu_list;
  return p;
}

}  // namespace

MemoryPlan plan_engine_memory(const Model& model, const EngineOptions& o, int n_ctx) {
  MemoryRequest r;
  r.n_ctx = n_ctx;
  r.n_seq = std::max(o.n_seq_max, 1);
  r.max_tokens = forward_rows(o, n_ctx);
  r.n_threads = o.n_threads;
  r.k_type = o.k_type.value_or(default_cache_type(model));
  r.v_type = o.v_type.value_or(default_cache_type(model));
  r.extra_logits_rows = o.kept_logits_rows;
  r.reserved = o.memory_reserved;
  r.budget = o.memory_budget;
  return plan_memory(model, r);
}

MemoryPlan check_engine_memory(const Model& model, const EngineOptions& o) {
  return checked_plan(require_weights(model), o, resolve_context(model, o.n_ctx));
}

// ---- Sequence ------------------------------------------------------------

void Sequence::add_tokens(const int32_t* tokens, size_t n, float* all_logits) {
  engine_->check_not_in_step("adding tokens");
  if (state_ == SeqState::finished)
    fail(BRISK_ERR_INVALID_ARGUMENT, "the sequence has finished; create a new one");
  if (state_ == SeqState::generating)
    fail(BRISK_ERR_INVALID_ARGUMENT, "the sequence is generating; wait until it stops");
  const int n_vocab = engine_->model_.config().n_vocab;
  for (size_t i = 0; i < n; ++i)
    if (tokens[i] < 0 || tokens[i] >= n_vocab)
      fail(BRISK_ERR_INVALID_ARGUMENT, "token id " + std::to_string(tokens[i]) + " is outside the vocabulary");
  const size_t queued = pending_.size() - pending_done_;
  if (static_cast<size_t>(pos_) + queued + n > static_cast<size_t>(engine_->n_ctx_))
    fail(BRISK_ERR_CONTEXT_FULL, std::to_string(n) + " tokens do not fit: the context holds " +
                                     std::to_string(engine_->n_ctx_) + " and " +
                                     std::to_string(pos_ + static_cast<int>(queued)) + " are used or queued");
  if (all_logits && all_out_)
    fail(BRISK_ERR_INVALID_ARGUMENT, "logits of every position are already being collected for queued tokens");
  if (all_logits && n > 0) {
    all_out_ = all_logits;
    all_from_ = pending_.size();
  }
  pending_.insert(pending_.end(), tokens, tokens + n);
  if (n > 0) resumable_ = false;  // the saved generation continued other text
  if (n > 0 && state_ == SeqState::idle) state_ = SeqState::prefill;
}

void Sequence::truncate(int n) {
  engine_->check_not_in_step("truncating a sequence");
  if (state_ == SeqState::finished) fail(BRISK_ERR_INVALID_ARGUMENT, "the sequence has finished; create a new one");
  if (state_ != SeqState::idle || pending_.size() != pending_done_)
    fail(BRISK_ERR_INVALID_ARGUMENT, "truncate a sequence only when it is idle (nothing queued, not generating)");
  if (n < 0 || n > pos_)
    fail(BRISK_ERR_INVALID_ARGUMENT, "cannot truncate to position " + std::to_string(n) + " of " + std::to_string(pos_));
  if (n == pos_) return;
  pos_ = n;
  context_.resize(static_cast<size_t>(n));
  logits_.clear();
  resumable_ = false;
}

void Sequence::rollback(int n) {
  pending_.clear();
  pending_done_ = 0;
  all_out_ = nullptr;
  want_generate_ = false;
  on_token_ = nullptr;
  if (state_ != SeqState::finished) state_ = SeqState::idle;
  if (n >= 0 && n < pos_) {
    pos_ = n;
    context_.resize(static_cast<size_t>(n));
  }
}

void Sequence::check_can_generate(int max_tokens) const {
  engine_->check_not_in_step("starting a generation");
  if (state_ == SeqState::finished)
    fail(BRISK_ERR_INVALID_ARGUMENT, "the sequence has finished; create a new one");
  if (state_ == SeqState::generating) fail(BRISK_ERR_INVALID_ARGUMENT, "the sequence is already generating");
  if (max_tokens < 0) fail(BRISK_ERR_INVALID_ARGUMENT, "max_tokens must not be negative");
  if (pos_ == 0 && pending_.size() == pending_done_)
    fail(BRISK_ERR_INVALID_ARGUMENT, "nothing to generate from: add prompt tokens first");
  if (state_ == SeqState::idle && logits_.empty())
    fail(BRISK_ERR_INVALID_ARGUMENT, "no logits after truncating: evaluate at least one token first");
}

void Sequence::generate(const SamplerParams& sampling, int max_tokens, bool stop_at_eos, TokenCallback on_token) {
  check_can_generate(max_tokens);  // a refused call leaves a running generation as it was
  own_sampler_ = std::make_unique<Sampler>(sampling);
  begin(*own_sampler_, max_tokens, stop_at_eos, std::move(on_token));
}

void Sequence::generate(Sampler& sampler, int max_tokens, bool stop_at_eos, TokenCallback on_token) {
  check_can_generate(max_tokens);
  begin(sampler, max_tokens, stop_at_eos, std::move(on_token));
}

// Nothing may touch `this` after the callbacks: a sequence freed inside one
// is deleted when they end.
void Sequence::begin(Sampler& sampler, int max_tokens, bool stop_at_eos, TokenCallback on_token) {
  // The penalty window: the last repeat_last_n tokens of the context, prompt
  // included, whichever sampler and path.
  sampler.clear_history();
  const size_t window = static_cast<size_t>(std::max(sampler.params().repeat_last_n, 0));
  const size_t total = context_.size() + pending_.size() - pending_done_;
  for (size_t i = total > window ? total - window : 0; i < total; ++i)
    sampler.accept(i < context_.size() ? context_[i] : pending_[pending_done_ + i - context_.size()]);
  sampler_ = &sampler;
  resumable_ = false;
  max_tokens_ = max_tokens;
  stop_at_eos_ = stop_at_eos;
  on_token_ = on_token ? std::make_shared<const TokenCallback>(std::move(on_token)) : nullptr;
  want_generate_ = true;
  generated_.clear();
  utf8_ = Utf8Stream();
  if (max_tokens == 0) return finish(StopReason::max_tokens);
  if (state_ != SeqState::idle) {
    state_ = SeqState::prefill;
    return;
  }
  // A sequence whose prompt is already evaluated samples its first token
  // now; its callback runs here, under the same rules as in a step.
  Engine::CallbackScope scope(*engine_);
  state_ = SeqState::generating;
  on_logits(logits_.data(), static_cast<int>(logits_.size()));
}

void Sequence::check_can_resume() const {
  engine_->check_not_in_step("resuming a generation");
  if (!resumable_)
    fail(BRISK_ERR_INVALID_ARGUMENT, "nothing to resume: only a sequence loaded from a state saved while generating "
                                     "resumes, before tokens are added or another generation starts");
}

void Sequence::resume(TokenCallback on_token) {
  check_can_resume();
  resumable_ = false;
  on_token_ = on_token ? std::make_shared<const TokenCallback>(std::move(on_token)) : nullptr;
  want_generate_ = true;
  // Loaded, the sampled token waits to be evaluated: the next step does it
  // and samples on. If steps evaluated it already, sample now, as begin().
  if (state_ != SeqState::idle) return;
  Engine::CallbackScope scope(*engine_);
  state_ = SeqState::generating;
  on_logits(logits_.data(), static_cast<int>(logits_.size()));
}

// Ends a generation: pending UTF-8 goes to the callback (token -1), whatever
// the reason. A persistent sequence then evaluates `unevaluated` (the last
// token of a generation that reached max_tokens, if it fits), so that a
// later generation continues the text, and goes back to idle; any other
// sequence finishes and gives its slot back.
void Sequence::finish(StopReason r, int32_t unevaluated) {
  stop_ = r;
  unevaluated_ = unevaluated;
  want_generate_ = false;
  pending_.clear();
  pending_done_ = 0;
  all_out_ = nullptr;
  // The callback is taken out first: it may free this sequence, which must
  // then find it finished (and not finish it twice).
  std::shared_ptr<const TokenCallback> cb = std::move(on_token_);
  on_token_.reset();
  const std::string rest = utf8_.flush();
  if (persistent_ && state_ != SeqState::finished) {
    if (unevaluated >= 0 && pos_ < engine_->n_ctx_) {
      pending_.assign(1, unevaluated);
      state_ = SeqState::prefill;
    } else {
      state_ = SeqState::idle;
    }
  } else {
    state_ = SeqState::finished;
    engine_->free_slot(*this);
  }
  if (!rest.empty() && cb && *cb) (*cb)(-1, rest);
}

// The sequence's queued tokens are all evaluated; these are the logits after the last.
void Sequence::on_logits(const float* logits, int n_vocab) {
  if (state_ == SeqState::finished) return;  // freed by a callback earlier in this step
  if (logits != logits_.data()) logits_.assign(logits, logits + n_vocab);
  if (!want_generate_) {
    state_ = SeqState::idle;
    return;
  }
  state_ = SeqState::generating;
  const Tokenizer& tok = engine_->model_.tokenizer();
  const int32_t t = sampler_->sample(logits_.data(), n_vocab);
  if (stop_at_eos_ && tok.is_eog(t)) return finish(StopReason::eos);
  sampler_->accept(t);
  generated_.push_back(t);
  std::string text = utf8_.push(generated_piece(tok, context_.empty() ? -1 : context_.back(), t));
  if (on_token_) {
    // A local reference: the callback may free this sequence (deferred until
    // the step ends), which drops on_token_ and finishes the generation.
    const std::shared_ptr<const TokenCallback> cb = on_token_;
    const bool go_on = !*cb || (*cb)(t, text);
    if (!want_generate_) return;  // finished inside the callback
    if (!go_on) return finish(StopReason::callback);  // the refused token is not kept
  }
  if (static_cast<int>(generated_.size()) >= max_tokens_) return finish(StopReason::max_tokens, t);
  if (pos_ >= engine_->n_ctx_) return finish(StopReason::context_full);
  pending_.assign(1, t);
  pending_done_ = 0;
}

// ---- Engine --------------------------------------------------------------

Engine::Engine(const Model& model, const EngineOptions& options)
    : model_(require_weights(model)),
      opt_(options),
      n_ctx_(resolve_context(model, options.n_ctx)),
      plan_(checked_plan(model, options, n_ctx_)),
      pool_(pool_options(options)),
      cache_(model.config(), options.n_seq_max, n_ctx_, options.k_type.value_or(default_cache_type(model)),
             options.v_type.value_or(default_cache_type(model))),
      fwd_(model.config(), options.weights ? *options.weights : model.weights(), forward_rows(options, n_ctx_), n_ctx_,
           pool_.size()),
      slot_owner_(static_cast<size_t>(options.n_seq_max), nullptr) {}

Engine::~Engine() = default;

void Engine::check_not_in_step(const char* what) const {
  if (in_step_)
    fail(BRISK_ERR_INVALID_ARGUMENT, std::string(what) + " is not allowed inside a token callback of the same engine");
}

Sequence* Engine::create_sequence() {
  check_not_in_step("creating a sequence");
  for (size_t i = 0; i < slot_owner_.size(); ++i) {
    if (slot_owner_[i]) continue;
    seqs_.push_back(std::unique_ptr<Sequence>(new Sequence(*this, static_cast<int>(i))));
    slot_owner_[i] = seqs_.back().get();
    return slot_owner_[i];
  }
  fail(BRISK_ERR_OUT_OF_MEMORY, "all " + std::to_string(slot_owner_.size()) +
                                    " sequence slots are in use; free a sequence or create the engine with more");
}

Sequence* Engine::fork(const Sequence& src) {
  check_not_in_step("forking a sequence");
  if (src.engine_ != this) fail(BRISK_ERR_INVALID_ARGUMENT, "the sequence belongs to another engine");
  if (src.state_ == SeqState::finished || src.slot_ < 0)
    fail(BRISK_ERR_INVALID_ARGUMENT, "cannot fork a finished sequence (its cache is gone)");
  if (src.pending_.size() != src.pending_done_ || src.state_ != SeqState::idle)
    fail(BRISK_ERR_INVALID_ARGUMENT, "fork a sequence only when it is idle (its prompt evaluated, not generating)");
  Sequence* dst = create_sequence();
  cache_.copy_prefix(src.slot_, dst->slot_, src.pos_);
  dst->pos_ = src.pos_;
  dst->context_ = src.context_;
  dst->logits_ = src.logits_;
  return dst;
}

void Engine::free_slot(Sequence& s) {
  if (s.slot_ >= 0) slot_owner_[static_cast<size_t>(s.slot_)] = nullptr;
  s.slot_ = -1;
}

void Engine::release(Sequence* seq) {
  if (!seq) return;
  if (in_step_) {
    // The step still holds pointers to it: silence it now, free it after.
    seq->on_token_ = nullptr;
    seq->persistent_ = false;
    if (seq->state_ != SeqState::finished) seq->finish(StopReason::callback);
    deferred_release_.push_back(seq);
    return;
  }
  free_slot(*seq);
  for (size_t i = 0; i < seqs_.size(); ++i) {
    if (seqs_[i].get() == seq) {
      seqs_.erase(seqs_.begin() + static_cast<std::ptrdiff_t>(i));
      return;
    }
  }
}

Engine::CallbackScope::CallbackScope(Engine& e) : e_(e) { e_.in_step_ = true; }

Engine::CallbackScope::~CallbackScope() {
  e_.in_step_ = false;
  std::vector<Sequence*> dead;
  dead.swap(e_.deferred_release_);
  for (Sequence* s : dead) e_.release(s);
}

int Engine::n_active() const {
  int n = 0;
  for (const auto& s : seqs_)
    if (s->state_ == SeqState::prefill || s->state_ == SeqState::generating) ++n;
  return n;
}

int Engine::step() {
  check_not_in_step("stepping");
  batch_.clear();
  batch_seq_.clear();
  batch_idx_.clear();
  const int budget = fwd_.max_tokens();
  auto take = [&](Sequence& s, int n) {
    for (int i = 0; i < n; ++i) {
      const size_t k = s.pending_done_ + static_cast<size_t>(i);
      const bool last = k + 1 == s.pending_.size();
      batch_.add(s.pending_[k], s.pos_ + i, s.slot_, last || (s.all_out_ && k >= s.all_from_));
      batch_seq_.push_back(&s);
      batch_idx_.push_back(k);
    }
  };
  // Decode tokens first: every generating sequence advances every step.
  for (auto& sp : seqs_) {
    Sequence& s = *sp;
    if (s.state_ == SeqState::generating && s.pending_.size() - s.pending_done_ == 1 && batch_.size() < budget)
      take(s, 1);
  }
  // Then prompt chunks, round-robin from where the last step stopped, so one
  // long prompt cannot starve the others.
  const size_t n_seqs = seqs_.size();
  const size_t first = n_seqs ? prefill_cursor_ % n_seqs : 0;
  for (size_t j = 0; j < n_seqs && batch_.size() < budget; ++j) {
    Sequence& s = *seqs_[(first + j) % n_seqs];
    if (s.state_ != SeqState::prefill) continue;
    const size_t left = s.pending_.size() - s.pending_done_;
    const int n = static_cast<int>(std::min<size_t>(left, static_cast<size_t>(budget - batch_.size())));
    if (n > 0) {
      take(s, n);
      prefill_cursor_ = (first + j + 1) % n_seqs;
    }
  }
  last_step_tokens_ = batch_.size();
  if (batch_.size() == 0) return n_active();

  // From here on abort checks and token callbacks may run: calls that would
  // change this engine are refused, and sequences freed meanwhile are
  // released when the step ends.
  CallbackScope scope(*this);
  if (!fwd_.run(batch_, cache_, pool_, opt_.abort, opt_.abort_ctx)) fail(BRISK_ERR_CANCELLED, "step cancelled");

  // Advance positions, then hand out logits in batch order (a sequence's
  // callback may finish it, which frees its slot but not the object).
  int row = 0;
  const int n_vocab = model_.config().n_vocab;
  for (int i = 0; i < batch_.size(); ++i) {
    Sequence& s = *batch_seq_[static_cast<size_t>(i)];
    const size_t k = batch_idx_[static_cast<size_t>(i)];
    const float* logits = batch_.want_logits[static_cast<size_t>(i)] ? fwd_.logits(row++) : nullptr;
    // Freed or stopped during this step (an abort check or an earlier
    // callback): its queued tokens are gone.
    if (s.state_ == SeqState::finished || k >= s.pending_.size()) continue;
    s.context_.push_back(batch_.tokens[static_cast<size_t>(i)]);
    ++s.pos_;
    ++s.pending_done_;
    if (logits && s.all_out_ && k >= s.all_from_)
      std::memcpy(s.all_out_ + (k - s.all_from_) * static_cast<size_t>(n_vocab), logits,
                  sizeof(float) * static_cast<size_t>(n_vocab));
    if (k + 1 != s.pending_.size()) continue;
    s.pending_.clear();
    s.pending_done_ = 0;
    s.all_out_ = nullptr;
    s.on_logits(logits, n_vocab);
  }
  return n_active();
}

void Engine::run_until_idle() {
  while (step() > 0) {
  }
}

}  // namespace brisk
