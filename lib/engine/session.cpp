#include "engine/session.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace brisk {

namespace {

ThreadPoolOptions pool_options(const SessionOptions& o) {
  ThreadPoolOptions p;
  p.n_threads = o.n_threads;
  p.pin = o.pin_threads;
  p.pin_caller = o.pin_caller;
  return p;
}

}  // namespace

Session::Session(const Model& model, const SessionOptions& options)
    : model_(require_weights(model)),
      opt_(options),
      n_ctx_(resolve_context(model, options.n_ctx)),
      pool_(pool_options(options)),
      cache_(model.config(), 1, n_ctx_, options.k_type.value_or(default_cache_type(model)),
             options.v_type.value_or(default_cache_type(model))),
      fwd_(model.config(), model.weights(), std::clamp(options.n_batch, 1, n_ctx_), n_ctx_, pool_.size()) {
  if (opt_.n_batch <= 0) fail(BRISK_ERR_INVALID_ARGUMENT, "batch size must be positive");
}

void Session::reset() {
  pos_ = 0;
  last_token_ = -1;
  last_logits_.clear();
}

void Session::truncate(int n) {
  if (n < 0 || n > pos_)
    fail(BRISK_ERR_INVALID_ARGUMENT, "cannot truncate to position " + std::to_string(n) + " of " + std::to_string(pos_));
  if (n == pos_) return;
  pos_ = n;
  last_token_ = -1;
  last_logits_.clear();
}

void Session::eval(const int32_t* tokens, size_t n, float* all_logits) {
  if (n == 0) return;
  if (n > static_cast<size_t>(n_ctx_ - pos_))
    fail(BRISK_ERR_CONTEXT_FULL, std::to_string(n) + " tokens do not fit: the context holds " +
                                     std::to_string(n_ctx_) + " and " + std::to_string(pos_) + " are used");
  const int n_vocab = model_.config().n_vocab;
  for (size_t i = 0; i < n; ++i)
    if (tokens[i] < 0 || tokens[i] >= n_vocab)
      fail(BRISK_ERR_INVALID_ARGUMENT, "token id " + std::to_string(tokens[i]) + " is outside the vocabulary");
  const int start = pos_;
  size_t done = 0;
  while (done < n) {
    const int chunk = static_cast<int>(std::min<size_t>(n - done, static_cast<size_t>(fwd_.max_tokens())));
    batch_.clear();
    for (int i = 0; i < chunk; ++i) {
      const bool last = done + i + 1 == n;
      batch_.add(tokens[done + i], pos_ + i, 0, all_logits != nullptr || last);
    }
    if (!fwd_.run(batch_, cache_, pool_, opt_.abort, opt_.abort_ctx)) {
      pos_ = start;
      fail(BRISK_ERR_CANCELLED, "evaluation cancelled");
    }
    if (all_logits)
      std::memcpy(all_logits + done * n_vocab, fwd_.logits(0), sizeof(float) * n_vocab * chunk);
    const int last_row = all_logits ? chunk - 1 : 0;
    if (done + chunk == n) last_logits_.assign(fwd_.logits(last_row), fwd_.logits(last_row) + n_vocab);
    pos_ += chunk;
    done += chunk;
  }
  last_token_ = tokens[n - 1];
}

StopReason Session::generate(Sampler& sampler, int max_tokens, bool stop_at_eos, const TokenCallback& on_token,
                             size_t* n_generated) {
  if (last_logits_.empty()) fail(BRISK_ERR_INVALID_ARGUMENT, "nothing evaluated yet: evaluate a prompt first");
  const Tokenizer& tok = model_.tokenizer();
  Utf8Stream utf8;
  size_t count = 0;
  auto finish = [&](StopReason r) {
    if (n_generated) *n_generated = count;
    return r;
  };
  for (int i = 0; i < max_tokens; ++i) {
    const int32_t t = sampler.sample(last_logits_.data(), model_.config().n_vocab);
    if (stop_at_eos && tok.is_eog(t)) {
      std::string rest = utf8.flush();
      if (!rest.empty() && on_token) on_token(-1, rest);
      return finish(StopReason::eos);
    }
    sampler.accept(t);
    ++count;
    std::string text = utf8.push(generated_piece(tok, last_token_, t));
    if (on_token && !on_token(t, text)) return finish(StopReason::callback);
    if (pos_ >= n_ctx_) return finish(StopReason::context_full);
    eval(&t, 1);
  }
  std::string rest = utf8.flush();
  if (!rest.empty() && on_token) on_token(-1, rest);
  return finish(StopReason::max_tokens);
}

}  // namespace brisk
