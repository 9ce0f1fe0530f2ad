// SPDX-License-Identifier: MIT
// Many sequences per weight read: the Engine owns the thread pool, a KV cache
// with one slot per concurrent sequence, and the scheduler.
//
// Every step() gathers the work of all sequences — one decode token for each
// generating sequence, plus prompt chunks up to the step's token budget —
// into one Batch and runs one forward pass, so each weight block is read once
// for the whole batch. Sequences join and leave between steps; a finished
// sequence gives its slot back at once. A long prompt is read in chunks so
// that generating sequences keep producing a token every step.
//
// The Engine and its Sequences belong to one thread at a time.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor_type.h"
#include "engine/common.h"
#include "engine/memory_plan.h"
#include "kv/kv_cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "sample/sampler.h"
#include "threads/thread_pool.h"
#include "tokenizer/tokenizer.h"

namespace brisk {

struct EngineOptions {
  int n_ctx = 0;        // per sequence; 0: the model's training context, at most 4096
  int n_seq_max = 1;    // sequences that can exist at once (KV slots)
  int n_threads = 0;    // 0: physical cores
  int n_batch = 512;    // most tokens in one step
  std::optional<TensorType> k_type, v_type;  // unset: see default_cache_type()
  bool pin_threads = true;
  bool pin_caller = false;  // also pin the constructing thread (thread 0)
  std::vector<int> cpu_list;
  AbortCheck abort = nullptr;
  void* abort_ctx = nullptr;
  // 0: read the machine's available memory; otherwise the budget in bytes
  // (tests use it to exercise the planner).
  uint64_t memory_budget = 0;
  // Bytes already planned for other engines of the same job (ppl's base model).
  uint64_t memory_reserved = 0;
  // Rows of logits the caller keeps for all-position evaluation (planned only).
  uint64_t kept_logits_rows = 0;
  // The weight views to compute with; nullptr: the model's. Must outlive the
  // engine (the evaluator points single matrices at other data).
  const Weights* weights = nullptr;
};

// The memory plan of this configuration (see engine/memory_plan.h).
MemoryPlan plan_engine_memory(const Model& model, const EngineOptions& options, int n_ctx);
// The plan, or BRISK_ERR_OUT_OF_MEMORY with the numbers if it does not fit:
// what the Engine's constructor does first, for callers that want to refuse
// before other work.
MemoryPlan check_engine_memory(const Model& model, const EngineOptions& options);

class Engine;

enum class SeqState { idle, prefill, generating, finished };

// One sequence: its tokens, position, slot, sampler and output.
class Sequence {
 public:
  using TokenCallback = std::function<bool(int32_t token, const std::string& text)>;

  // Queues tokens to evaluate (the prompt, or more of it later). With
  // all_logits, the logits after each of these tokens are written there as
  // they are evaluated (n rows of n_vocab floats; the buffer must outlive
  // the steps that evaluate them).
  void add_tokens(const int32_t* tokens, size_t n, float* all_logits = nullptr);
  // After the queued tokens are evaluated, generate up to max_tokens. The
  // repetition penalty sees the last repeat_last_n tokens of the context
  // (prompt included) on every path.
  void generate(const SamplerParams& sampling, int max_tokens, bool stop_at_eos, TokenCallback on_token);
  // The same with a sampler the caller owns (its random state carries over
  // between generations; its penalty history is set from the context).
  void generate(Sampler& sampler, int max_tokens, bool stop_at_eos, TokenCallback on_token);
  // Continues the generation a state file saved between steps
  // (engine/seq_state.h): its sampler, budget and generated tokens are the
  // saved ones; only the callback is new. Possible while the loaded sequence
  // is unchanged (stepping it is fine; adding tokens, truncating or a new
  // generate drops the saved generation).
  void resume(TokenCallback on_token);
  void check_can_resume() const;
  bool resumable() const { return resumable_; }
  // A persistent sequence keeps its slot when a generation stops: it goes
  // back to idle, the last token evaluated if max_tokens was reached (a
  // Session). Default: it finishes and gives its slot back.
  void set_persistent(bool persistent) { persistent_ = persistent; }
  // Forgets the evaluated tokens from position n on (idle sequences only);
  // logits are gone until more tokens are evaluated.
  void truncate(int n);
  // After a failed step (cancelled): forget what was queued and go back to
  // position n, keeping the logits from before.
  void rollback(int n);

  SeqState state() const { return state_; }
  int position() const { return pos_; }
  StopReason stop_reason() const { return stop_; }
  const std::vector<int32_t>& generated() const { return generated_; }
  const std::vector<float>& logits() const { return logits_; }
  const std::vector<int32_t>& context() const { return context_; }
  int slot() const { return slot_; }  // -1 once finished (the slot is given back)

 private:
  friend class Engine;
  friend struct SeqStateAccess;  // engine/seq_state.cpp saves and restores it
  Sequence(Engine& e, int slot) : engine_(&e), slot_(slot) {}
  void check_can_generate(int max_tokens) const;
  void begin(Sampler& sampler, int max_tokens, bool stop_at_eos, TokenCallback on_token);
  void finish(StopReason r, int32_t unevaluated = -1);
  void on_logits(const float* logits, int n_vocab);

  Engine* engine_;
  int slot_;
  int pos_ = 0;                      // tokens in the cache
  std::vector<int32_t> pending_;     // tokens still to evaluate
  size_t pending_done_ = 0;          // how many of pending_ are evaluated
  std::vector<int32_t> context_;     // every evaluated token (for forks and penalties)
  SeqState state_ = SeqState::idle;
  bool want_generate_ = false;
  int max_tokens_ = 0;
  bool stop_at_eos_ = true;
  std::unique_ptr<Sampler> own_sampler_;
  Sampler* sampler_ = nullptr;  // own_sampler_ or the caller's
  bool persistent_ = false;
  float* all_out_ = nullptr;    // rows for pending_[all_from_..]
  size_t all_from_ = 0;
  std::shared_ptr<const TokenCallback> on_token_;
  Utf8Stream utf8_;
  std::vector<int32_t> generated_;
  std::vector<float> logits_;
  StopReason stop_ = StopReason::max_tokens;
  int32_t unevaluated_ = -1;  // a finished generation's last token, not in the cache (max_tokens)
  bool resumable_ = false;    // holds a generation loaded from a state file
};

class Engine {
 public:
  Engine(const Model& model, const EngineOptions& options);
  ~Engine();

  // A new sequence in a free slot; BRISK_ERR_OUT_OF_MEMORY naming the limit if none is free.
  Sequence* create_sequence();
  // A new sequence whose context is a copy of src's evaluated tokens (its
  // KV rows copied, not recomputed). src must have nothing pending.
  Sequence* fork(const Sequence& src);
  // Frees the sequence and its slot; the pointer is invalid afterwards.
  void release(Sequence* seq);

  // Runs one forward pass over the ready work of every sequence and delivers
  // tokens to callbacks. Returns the number of sequences that still have work
  // (prefill or generating). Throws BRISK_ERR_CANCELLED if aborted.
  int step();
  // Steps until no sequence has work.
  void run_until_idle();

  int n_active() const;
  int n_ctx() const { return n_ctx_; }
  int n_seq_max() const { return static_cast<int>(slot_owner_.size()); }
  const Model& model() const { return model_; }
  const ThreadPool& pool() const { return pool_; }
  ThreadPool& pool() { return pool_; }
  const KVCache& cache() const { return cache_; }
  const MemoryPlan& memory_plan() const { return plan_; }
  // Tokens evaluated by the last step (prompt and decode), for statistics.
  int last_step_tokens() const { return last_step_tokens_; }
  // True while a step runs (its forward pass, abort checks and callbacks):
  // calls that change the engine or its sequences are refused then.
  bool in_step() const { return in_step_; }
  // Every matmul's input is shown to the observer (calibration statistics).
  void set_observer(MatmulObserver* observer) { fwd_.set_observer(observer); }

 private:
  friend class Sequence;
  friend struct SeqStateAccess;  // engine/seq_state.cpp restores into it
  const Model& model_;
  EngineOptions opt_;
  int n_ctx_;
  MemoryPlan plan_;
  ThreadPool pool_;
  KVCache cache_;
  Forward fwd_;
  Batch batch_;
  std::vector<std::unique_ptr<Sequence>> seqs_;  // every live sequence
  std::vector<Sequence*> slot_owner_;            // per KV slot; nullptr: free
  void free_slot(Sequence& s);
  std::vector<Sequence*> batch_seq_;              // the sequence each batch token belongs to
  std::vector<size_t> batch_idx_;                 // and its index in that sequence's pending_
  int last_step_tokens_ = 0;
  // While one exists, callbacks may run: changes are refused and freed
  // sequences are released when it ends.
  class CallbackScope {
   public:
    explicit CallbackScope(Engine& e);
    ~CallbackScope();
   private:
    Engine& e_;
  };
  bool in_step_ = false;                    // callbacks are running
  std::vector<Sequence*> deferred_release_;  // freed inside a callback
  void check_not_in_step(const char* what) const;
  size_t prefill_cursor_ = 0;  // round-robin start for prompt chunks (fairness)
};

}  // namespace brisk
