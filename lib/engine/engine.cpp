#include "engine/engine.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace brisk {

namespace {

std::string mb(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

// Refuses a configuration that does not fit, naming the numbers and what would.
MemoryPlan checked_plan(const Model& model, const EngineOptions& o, int n_ctx) {
  if (o.n_seq_max <= 0) fail(BRISK_ERR_INVALID_ARGUMENT, "at least one sequence slot is needed");
  if (o.n_batch <= 0) fail(BRISK_ERR_INVALID_ARGUMENT, "batch size must be positive");
  MemoryPlan p = plan_memory(model, o, n_ctx);
  // Keep a little headroom for the process itself and the page cache.
  const uint64_t usable = p.available - p.available / 20;
  if (p.available == 0 || p.total() <= usable) return p;
  const uint64_t per_seq = p.kv / static_cast<uint64_t>(o.n_seq_max);
  const uint64_t fixed = p.weights + p.scratch;
  const uint64_t room = usable > fixed ? usable - fixed : 0;
  const uint64_t max_par = per_seq ? room / per_seq : 0;
  const uint64_t per_pos = per_seq / static_cast<uint64_t>(n_ctx);
  const uint64_t max_ctx = per_pos ? room / (per_pos * static_cast<uint64_t>(o.n_seq_max)) : 0;
  std::string msg = "not enough memory for " + std::to_string(o.n_seq_max) + " sequences x " +
                    std::to_string(n_ctx) + " context: needs " + mb(p.total()) + " (weights " + mb(p.weights) +
                    " + KV cache " + mb(p.kv) + " + scratch " + mb(p.scratch) + "), " + mb(p.available) +
                    " available. ";
  if (max_par >= 1)
    msg += "At this context, at most " + std::to_string(max_par) + " parallel sequences fit";
  else
    msg += "Not even one sequence fits at this context";
  if (max_ctx >= 1) msg += "; with " + std::to_string(o.n_seq_max) + " sequences, a context of at most " +
                           std::to_string(max_ctx) + " fits";
  fail(BRISK_ERR_OUT_OF_MEMORY, msg + ".");
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

// ---- Sequence ------------------------------------------------------------

void Sequence::add_tokens(const int32_t* tokens, size_t n) {
  engine_->check_not_in_step("adding tokens");
  if (state_ == SeqState::finished)
    fail(BRISK_ERR_INVALID_ARGUMENT, "the sequence has finished; create a new one");
  const int n_vocab = engine_->model_.config().n_vocab;
  for (size_t i = 0; i < n; ++i)
    if (tokens[i] < 0 || tokens[i] >= n_vocab)
      fail(BRISK_ERR_INVALID_ARGUMENT, "token id " + std::to_string(tokens[i]) + " is outside the vocabulary");
  const size_t queued = pending_.size() - pending_done_;
  if (static_cast<size_t>(pos_) + queued + n > static_cast<size_t>(engine_->n_ctx_))
    fail(BRISK_ERR_CONTEXT_FULL, std::to_string(n) + " tokens do not fit: the context holds " +
                                     std::to_string(engine_->n_ctx_) + " and " +
                                     std::to_string(pos_ + static_cast<int>(queued)) + " are used or queued");
  pending_.insert(pending_.end(), tokens, tokens + n);
  if (n > 0 && state_ == SeqState::idle) state_ = SeqState::prefill;
}

void Sequence::generate(const SamplerParams& sampling, int max_tokens, bool stop_at_eos, TokenCallback on_token) {
  engine_->check_not_in_step("starting a generation");
  if (state_ == SeqState::finished)
    fail(BRISK_ERR_INVALID_ARGUMENT, "the sequence has finished; create a new one");
  if (max_tokens < 0) fail(BRISK_ERR_INVALID_ARGUMENT, "max_tokens must not be negative");
  if ((pos_ == 0 || logits_.empty()) && pending_.size() == pending_done_)
    fail(BRISK_ERR_INVALID_ARGUMENT, "nothing to generate from: add prompt tokens first");
  sampler_ = std::make_unique<Sampler>(sampling);
  for (int32_t t : context_) sampler_->accept(t);
  for (size_t i = pending_done_; i < pending_.size(); ++i) sampler_->accept(pending_[i]);
  max_tokens_ = max_tokens;
  stop_at_eos_ = stop_at_eos;
  on_token_ = std::move(on_token);
  want_generate_ = true;
  generated_.clear();
  if (max_tokens == 0) return finish(StopReason::max_tokens);
  // A sequence whose prompt is already evaluated samples from its logits now.
  if (state_ == SeqState::idle) {
    state_ = SeqState::generating;
    on_logits(logits_.data(), static_cast<int>(logits_.size()));
  } else {
    state_ = SeqState::prefill;
  }
}

void Sequence::truncate(int position) {
  engine_->check_not_in_step("truncating a sequence");
  if (state_ != SeqState::idle || pending_.size() != pending_done_)
    fail(BRISK_ERR_INVALID_ARGUMENT, "truncate a sequence only when it is idle");
  if (position < 0 || position > pos_)
    fail(BRISK_ERR_INVALID_ARGUMENT, "cannot truncate to " + std::to_string(position) + ": the sequence holds " +
                                         std::to_string(pos_) + " tokens");
  if (position == pos_) return;
  // Rows past `position` stay in the slot but are overwritten before they are read.
  pos_ = position;
  context_.resize(static_cast<size_t>(position));
  logits_.clear();
}

void Sequence::finish(StopReason r) {
  stop_ = r;
  state_ = SeqState::finished;
  pending_.clear();
  pending_done_ = 0;
  std::string rest = utf8_.flush();
  if (!rest.empty() && on_token_) on_token_(-1, rest);
  engine_->free_slot(*this);
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
  if (on_token_ && !on_token_(t, text)) return finish(StopReason::callback);
  if (static_cast<int>(generated_.size()) >= max_tokens_) return finish(StopReason::max_tokens);
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
      fwd_(model.config(), model.weights(), std::max(std::min(options.n_batch, n_ctx_ * options.n_seq_max),
                                                     options.n_seq_max),
           n_ctx_, pool_.size()),
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
  const int budget = fwd_.max_tokens();
  auto take = [&](Sequence& s, int n) {
    for (int i = 0; i < n; ++i) {
      const size_t k = s.pending_done_ + static_cast<size_t>(i);
      const bool last = k + 1 == s.pending_.size();
      batch_.add(s.pending_[k], s.pos_ + i, s.slot_, last);
      batch_seq_.push_back(&s);
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

  if (!fwd_.run(batch_, cache_, pool_, opt_.abort, opt_.abort_ctx))
    fail(BRISK_ERR_CANCELLED, "step cancelled");

  // Advance positions, then hand out logits in batch order (a sequence's
  // callback may finish it, which frees its slot but not the object).
  int row = 0;
  const int n_vocab = model_.config().n_vocab;
  in_step_ = true;
  struct Leave {
    Engine& e;
    ~Leave() {
      e.in_step_ = false;
      std::vector<Sequence*> dead;
      dead.swap(e.deferred_release_);
      for (Sequence* s : dead) e.release(s);
    }
  } leave{*this};
  for (int i = 0; i < batch_.size(); ++i) {
    Sequence& s = *batch_seq_[static_cast<size_t>(i)];
    s.context_.push_back(batch_.tokens[static_cast<size_t>(i)]);
    ++s.pos_;
    ++s.pending_done_;
    if (!batch_.want_logits[static_cast<size_t>(i)]) continue;
    s.pending_.clear();
    s.pending_done_ = 0;
    s.on_logits(fwd_.logits(row++), n_vocab);
  }
  return n_active();
}

void Engine::run_until_idle() {
  while (step() > 0) {
  }
}

}  // namespace brisk
