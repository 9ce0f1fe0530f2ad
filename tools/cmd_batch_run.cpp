// SPDX-License-Identifier: MIT
#include "cmd_batch_run.h"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <vector>

#include "cmd_batch_io.h"
#include "common.h"

namespace brisk::tools::batch {

namespace {

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }
int abort_requested(void*) { return g_stop; }

// A record being generated. Held by pointer: the token callback keeps it.
struct Active {
  size_t pos = 0;  // in the shard's record list
  Request req;
  brisk_sequence* seq = nullptr;
  std::string text;
  bool stopped = false;  // a stop string ended it
};

// Cuts the text at the first stop string and asks to stop.
int on_token(void* user_data, int32_t, const char* text, size_t len) {
  Active& a = *static_cast<Active*>(user_data);
  if (a.stopped) return 1;
  const size_t old = a.text.size();
  a.text.append(text, len);
  size_t cut = std::string::npos;
  for (const std::string& s : a.req.stop) {
    const size_t from = old >= s.size() ? old - s.size() + 1 : 0;
    cut = std::min(cut, a.text.find(s, from));
  }
  if (cut == std::string::npos) return 0;
  a.text.resize(cut);
  a.stopped = true;
  return 1;
}

// A sequence holding a prompt prefix that several records share; records
// fork it instead of evaluating the prefix again.
struct Prefix {
  std::vector<int32_t> tokens;
  brisk_sequence* seq = nullptr;
  uint64_t last_used = 0;
};

size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

// The length of the next shared prefix to make for a prompt, from its
// overlaps with the records ahead: of the lengths past `base` (the longest
// prefix already held), the one shared by the most of them, the longest of
// those. It needs two sharers and a saving, sharers * (length - base), of two
// --prefix-min's, since it costs a slot and a step of its own; 0 when no
// length qualifies. Called again with the result as base, it grows the tree
// one level at a time, widest level first.
size_t next_prefix_length(std::vector<size_t> overlaps, size_t base, size_t min) {
  std::sort(overlaps.begin(), overlaps.end(), std::greater<>());
  size_t best = 0, best_sharers = 0;
  for (size_t i = 0; i < overlaps.size(); ++i) {
    const size_t len = overlaps[i];
    if (len <= base || len < min) break;
    if (i + 1 < overlaps.size() && overlaps[i + 1] == len) continue;  // count every sharer of this length
    const size_t sharers = i + 1;
    if (sharers >= 2 && sharers * (len - base) >= 2 * min && sharers > best_sharers) {
      best = len;
      best_sharers = sharers;
    }
  }
  return best;
}

std::string fmt_duration(double s) {
  char buf[32];
  const long t = static_cast<long>(s);
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, t / 60 % 60);
  else std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
  return buf;
}

class Runner {
 public:
  Runner(RunSettings& s, brisk_model* m, const Input& in, Journal& j, size_t done)
      : s_(s), model_(m), in_(in), journal_(j), done_before_(done), next_start_(done), next_write_(done) {}
  ~Runner() {
    for (auto& a : active_) brisk_sequence_free(a->seq);
    for (Prefix& p : prefixes_) brisk_sequence_free(p.seq);
    brisk_engine_free(engine_);
  }

  // Returns the exit code.
  int run() {
    const size_t left = in_.records.size() - done_before_;
    t0_ = last_progress_ = now_seconds();
    if (left > 0) {
      if (!create_engine(left)) return 1;
      while (!g_stop && (next_write_ < in_.records.size())) {
        if (!fill()) return 1;
        if (active_.empty()) {
          if (!write_ready()) return 1;
          continue;
        }
        if (!step()) return g_stop ? interrupted() : 1;
        progress(false);
      }
      if (g_stop) return interrupted();
    }
    progress(true);
    summary();
    return 0;
  }

 private:
  bool fail(const char* what, brisk_status st) {
    std::fprintf(stderr, "%sbrisk batch: error: %s: %s (%s)\n", drawn_ ? "\n" : "", what, brisk_last_error(),
                 brisk_status_name(st));
    fatal_ = true;
    return false;
  }

  int interrupted() {
    std::fprintf(stderr, "%sbrisk batch: interrupted after %zu of %zu records; run the same command to continue\n",
                 drawn_ ? "\n" : "", next_write_, in_.records.size());
    return 130;
  }

  bool create_engine(size_t left) {
    brisk_engine_options eo;
    brisk_engine_options_init(&eo);
    eo.n_ctx = static_cast<uint32_t>(s_.n_ctx);
    eo.n_threads = static_cast<uint32_t>(s_.n_threads);
    eo.n_batch = static_cast<uint32_t>(s_.n_batch);
    eo.cache_type_k = s_.cache_k;
    eo.cache_type_v = s_.cache_v;
    eo.no_pin = s_.no_pin ? 1 : 0;
    eo.abort_fn = abort_requested;
    // Records run `parallel` at once; idle sequences holding shared prefixes
    // (one per four records, at least two, so that a prefix and one growing
    // from it fit) take extra slots, so they cost memory, not parallelism.
    // With the memory plan's count, both come out of it.
    uint32_t parallel = static_cast<uint32_t>(s_.parallel), slots = 0;
    if (parallel == 0) {
      eo.n_seq_max = 64;
      const brisk_status st = brisk_engine_max_sequences(model_, &eo, &slots);
      if (st != BRISK_OK) return fail("planning memory", st);
      if (slots == 0) {
        std::fprintf(stderr, "brisk batch: error: not even one sequence fits in memory; try a smaller -c\n");
        return false;
      }
      slots = static_cast<uint32_t>(std::min<size_t>(slots, left + 1));  // no more than there is work for
      max_prefixes_ = s_.prefix_min <= 0 || slots < 2 ? 0 : slots < 4 ? 1 : std::max<size_t>(2, slots / 9);
      parallel = slots - static_cast<uint32_t>(max_prefixes_);
    } else {
      max_prefixes_ = s_.prefix_min > 0 ? std::max<size_t>(2, parallel / 4) : 0;
      slots = parallel + static_cast<uint32_t>(max_prefixes_);
    }
    eo.n_seq_max = slots;
    const brisk_status st = brisk_engine_create(model_, &eo, &engine_);
    if (st != BRISK_OK) return fail("creating the engine", st);
    record_slots_ = parallel;
    char desc[512];
    size_t needed = 0;
    if (brisk_engine_describe(engine_, desc, sizeof desc, &needed) == BRISK_OK)
      std::fprintf(stderr, "brisk batch: %zu records to do (%zu done before), %u sequences at once: %s\n", left,
                   done_before_, parallel, desc);
    return true;
  }

  const Request& prepared(size_t pos) {
    auto it = prepared_.find(pos);
    if (it == prepared_.end())
      it = prepared_.emplace(pos, prepare(model_, s_.defaults, in_.records[pos].index, in_.records[pos].text)).first;
    return it->second;
  }

  // The longest held prefix that begins `tokens` (at least --prefix-min).
  Prefix* held_prefix(const std::vector<int32_t>& tokens) {
    Prefix* best = nullptr;
    for (Prefix& p : prefixes_)
      if (p.tokens.size() >= static_cast<size_t>(s_.prefix_min) && common_prefix(p.tokens, tokens) == p.tokens.size() &&
          (!best || p.tokens.size() > best->tokens.size()))
        best = &p;
    return best;
  }

  // The shared prefix to fork for a prompt; nullptr to evaluate it whole.
  // Prefixes form a tree: a new one forks the longest held one it extends
  // (an instruction shared by all, then a log's date shared by a few), so a
  // common part is read once however many longer prefixes grow from it.
  Prefix* prefix_for(size_t pos, const std::vector<int32_t>& tokens) {
    if (max_prefixes_ == 0) return nullptr;
    std::vector<size_t> overlaps;
    const size_t ahead = std::max<size_t>(16, 2 * record_slots_);
    for (size_t j = pos + 1; j < in_.records.size() && j <= pos + ahead; ++j) {
      const Request& r = prepared(j);
      if (r.error.empty()) overlaps.push_back(common_prefix(tokens, r.tokens));
    }
    Prefix* base = held_prefix(tokens);
    for (;;) {
      const size_t base_len = base ? base->tokens.size() : 0;
      const size_t len = next_prefix_length(overlaps, base_len, static_cast<size_t>(s_.prefix_min));
      if (len == 0 || !free_prefix_slot(tokens)) break;
      Prefix p;
      p.tokens.assign(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(len));
      brisk_status st = base ? brisk_sequence_fork(base->seq, &p.seq) : brisk_sequence_create(engine_, &p.seq);
      if (st == BRISK_OK) st = brisk_sequence_add_tokens(p.seq, p.tokens.data() + base_len, len - base_len);
      if (st != BRISK_OK) {
        brisk_sequence_free(p.seq);
        break;
      }
      prefix_tokens_ += len - base_len;
      prefixes_.push_back(std::move(p));
      base = &prefixes_.back();
      // Evaluate it now; the records already running advance in the same steps.
      while (brisk_sequence_get_state(base->seq) != BRISK_SEQ_IDLE)
        if (!step()) return nullptr;
    }
    return base;
  }

  // Room for one more prefix of `tokens`: a free slot, or the least recently
  // used prefix that is not one of its own (their users are its users too).
  bool free_prefix_slot(const std::vector<int32_t>& tokens) {
    if (prefixes_.size() < max_prefixes_) return true;
    auto lru = prefixes_.end();
    for (auto it = prefixes_.begin(); it != prefixes_.end(); ++it)
      if (common_prefix(it->tokens, tokens) < it->tokens.size() &&
          (lru == prefixes_.end() || it->last_used < lru->last_used))
        lru = it;
    if (lru == prefixes_.end()) return false;
    brisk_sequence_free(lru->seq);
    prefixes_.erase(lru);
    return true;
  }

  // A record forked `p`: it and the prefixes it grew from were just used.
  void touch(const Prefix& p) {
    ++clock_;
    for (Prefix& q : prefixes_)
      if (common_prefix(q.tokens, p.tokens) == q.tokens.size()) q.last_used = clock_;
  }

  // Starts records while there are free slots; false on a fatal error.
  bool fill() {
    while (!g_stop && next_start_ < in_.records.size() && active_.size() < record_slots_) {
      const size_t pos = next_start_++;
      auto a = std::make_unique<Active>();
      a->pos = pos;
      a->req = prepared(pos);
      prepared_.erase(pos);
      if (!a->req.error.empty()) {
        results_[pos] = error_line(a->req);
        ++errors_;
        continue;
      }
      const std::vector<int32_t>& t = a->req.tokens;
      Prefix* p = prefix_for(pos, t);
      if (fatal_) return false;
      if (g_stop) return true;
      brisk_status st;
      size_t shared = 0;
      if (p) {
        touch(*p);
        shared = p->tokens.size();
        st = brisk_sequence_fork(p->seq, &a->seq);
      } else {
        st = brisk_sequence_create(engine_, &a->seq);
      }
      if (st == BRISK_OK && shared < t.size()) st = brisk_sequence_add_tokens(a->seq, t.data() + shared, t.size() - shared);
      brisk_generate_options go;
      brisk_generate_options_init(&go);
      go.max_tokens = a->req.max_tokens;
      go.stop_at_eos = s_.stop_at_eos ? 1 : 0;
      go.token_fn = on_token;
      go.token_user_data = a.get();
      if (st == BRISK_OK) st = brisk_sequence_generate(a->seq, &a->req.sampling, &go);
      if (st != BRISK_OK) {
        if (st == BRISK_ERR_OUT_OF_MEMORY || st == BRISK_ERR_INTERNAL || st == BRISK_ERR_CANCELLED)
          return fail("starting a record", st);
        a->req.error = brisk_last_error();
        brisk_sequence_free(a->seq);
        results_[pos] = error_line(a->req);
        ++errors_;
        continue;
      }
      prompt_tokens_ += t.size() - shared;
      shared_tokens_ += shared;
      active_.push_back(std::move(a));
    }
    return true;
  }

  // One engine step, then the finished records go to the output.
  bool step() {
    uint32_t n_active = 0;
    const brisk_status st = brisk_engine_step(engine_, &n_active);
    if (st != BRISK_OK) return g_stop ? false : fail("generating", st);
    for (size_t i = 0; i < active_.size();) {
      Active& a = *active_[i];
      if (brisk_sequence_get_state(a.seq) != BRISK_SEQ_FINISHED) {
        ++i;
        continue;
      }
      size_t n_gen = 0;
      brisk_sequence_generated(a.seq, nullptr, 0, &n_gen);
      const char* reason = "length";
      switch (brisk_sequence_stop_reason(a.seq)) {
        case BRISK_STOP_EOS:
        case BRISK_STOP_CALLBACK: reason = "stop"; break;
        case BRISK_STOP_CONTEXT_FULL: reason = "context_full"; break;
        case BRISK_STOP_MAX_TOKENS: break;
      }
      generated_tokens_ += n_gen;
      results_[a.pos] = result_line(a.req, a.text, n_gen, reason);
      brisk_sequence_free(a.seq);
      active_.erase(active_.begin() + static_cast<std::ptrdiff_t>(i));
    }
    return write_ready();
  }

  // Appends the records that are next in input order, synced as one group.
  bool write_ready() {
    std::string lines;
    for (auto it = results_.find(next_write_); it != results_.end(); it = results_.find(next_write_)) {
      lines += it->second;
      results_.erase(it);
      ++next_write_;
    }
    if (lines.empty()) return true;
    std::string error;
    if (!journal_.append(lines, &error)) {
      std::fprintf(stderr, "brisk batch: error: %s\n", error.c_str());
      return false;
    }
    return true;
  }

  void progress(bool final) {
    const double now = now_seconds();
    const bool tty = ::isatty(2);
    if (!final && now - last_progress_ < (tty ? 0.25 : s_.progress_interval)) return;
    if (final && !drawn_ && !tty && next_write_ == done_before_) return;
    last_progress_ = now;
    const size_t total = in_.records.size(), done = next_write_;
    const double el = std::max(now - t0_, 1e-9);
    const double tps = static_cast<double>(generated_tokens_) / el;
    std::string eta = "--";
    if (done > done_before_ && done < total)
      eta = fmt_duration(el / static_cast<double>(done - done_before_) * static_cast<double>(total - done));
    char line[256];
    if (tty) {
      const int width = 30, fill = total ? static_cast<int>(width * done / total) : width;
      std::string bar(static_cast<size_t>(fill), '#');
      bar.resize(width, '.');
      std::snprintf(line, sizeof line, "\r\033[K[%s] %zu/%zu %.1f tok/s ETA %s", bar.c_str(), done, total, tps,
                    eta.c_str());
      drawn_ = true;
    } else {
      std::snprintf(line, sizeof line, "brisk batch: %zu/%zu records, %.1f tok/s, ETA %s\n", done, total, tps,
                    eta.c_str());
    }
    std::fputs(line, stderr);
    if (final && drawn_) std::fputs("\n", stderr);
  }

  void summary() {
    const double el = std::max(now_seconds() - t0_, 1e-9);
    const size_t done_now = next_write_ - done_before_;
    // The records' own tokens per second: prompts (read or forked) and text.
    const double all_tps = static_cast<double>(prompt_tokens_ + shared_tokens_ + generated_tokens_) / el;
    std::fprintf(stderr,
                 "brisk batch: %zu records (%zu this run, %zu before), %zu errors this run; %zu prompt tokens "
                 "(+%zu from shared prefixes, which read %zu), %zu generated in %.2fs: %.1f generated tok/s, %.1f "
                 "tok/s with prompts\n",
                 next_write_, done_now, done_before_, errors_, prompt_tokens_, shared_tokens_, prefix_tokens_,
                 generated_tokens_, el, generated_tokens_ / el, all_tps);
    if (!s_.json_summary) return;
    nlohmann::ordered_json j;
    j["output"] = s_.output_path;
    j["records"] = in_.records.size();
    j["records_done_before"] = done_before_;
    j["records_this_run"] = done_now;
    j["errors_this_run"] = errors_;
    j["prompt_tokens"] = prompt_tokens_;
    j["shared_prefix_tokens"] = shared_tokens_;
    j["prefix_tokens_read"] = prefix_tokens_;
    j["generated_tokens"] = generated_tokens_;
    j["seconds"] = el;
    j["generated_tokens_per_s"] = generated_tokens_ / el;
    j["tokens_per_s"] = all_tps;
    std::printf("%s\n", j.dump(2).c_str());
  }

  RunSettings& s_;
  brisk_model* model_;
  const Input& in_;
  Journal& journal_;
  brisk_engine* engine_ = nullptr;
  size_t done_before_, next_start_, next_write_;
  size_t record_slots_ = 1, max_prefixes_ = 0;
  std::vector<std::unique_ptr<Active>> active_;
  std::list<Prefix> prefixes_;  // stable addresses: records hold them while forking
  std::map<size_t, Request> prepared_;     // tokenized ahead (prefix look-ahead)
  std::map<size_t, std::string> results_;  // finished, waiting for their turn
  uint64_t clock_ = 0;
  size_t errors_ = 0, prompt_tokens_ = 0, shared_tokens_ = 0, generated_tokens_ = 0;
  size_t prefix_tokens_ = 0;  // read to build shared prefixes
  double t0_ = 0, last_progress_ = 0;
  bool drawn_ = false;
  bool fatal_ = false;  // an engine call failed: stop the run
};

// What the output is tied to: a resumed run must match all of it.
nlohmann::ordered_json make_meta(const RunSettings& s, const std::string& identity, const Input& in) {
  nlohmann::ordered_json m;
  m["format"] = "brisk-batch 1";
  m["model_identity"] = identity;
  m["input"] = {{"bytes", in.bytes}, {"fnv1a64", in.hash}, {"records", in.total}};
  m["shard"] = {s.shard_k, s.shard_n};
  const brisk_sampler_options& p = s.defaults.sampling;
  m["options"] = {{"max_tokens", s.defaults.max_tokens}, {"temperature", p.temperature}, {"top_k", p.top_k},
                  {"top_p", p.top_p},           {"min_p", p.min_p},     {"repeat_penalty", p.repeat_penalty},
                  {"repeat_last_n", p.repeat_last_n}, {"seed", p.seed}, {"system", s.defaults.system},
                  {"chat_template", s.defaults.chat_template}, {"stop_at_eos", s.stop_at_eos},
                  {"n_ctx", s.n_ctx},           {"cache_type_k", s.cache_k}, {"cache_type_v", s.cache_v}};
  m["model_path"] = s.model_path;  // for people; not compared
  return m;
}

}  // namespace

int run(RunSettings& s) {
  std::string error;
  Input in;
  if (!read_input(s.input_path, s.shard_k, s.shard_n, &in, &error)) {
    std::fprintf(stderr, "brisk batch: error: %s\n", error.c_str());
    return 1;
  }
  brisk_model* model = nullptr;
  brisk_status st = brisk_model_open(s.model_path.c_str(), &s.load, &model);
  if (st != BRISK_OK) return report("batch", st);
  std::unique_ptr<brisk_model, void (*)(brisk_model*)> model_guard(model, brisk_model_close);
  char identity[64];
  size_t needed = 0;
  if ((st = brisk_model_identity(model, identity, sizeof identity, &needed)) != BRISK_OK) return report("batch", st);
  const int32_t train = brisk_model_n_ctx_train(model);
  s.defaults.n_ctx = static_cast<uint32_t>(s.n_ctx > 0 ? s.n_ctx : std::min(train > 0 ? train : 4096, 4096));

  // Resume only what this very run would have written.
  nlohmann::ordered_json meta = make_meta(s, identity, in);
  nlohmann::json was;
  const bool have_sidecar = read_sidecar(s.output_path, &was, &error);
  if (!error.empty()) {
    std::fprintf(stderr, "brisk batch: error: %s\n", error.c_str());
    return 1;
  }
  std::vector<uint64_t> expected;
  for (const InputRecord& r : in.records) expected.push_back(r.index);
  if (have_sidecar) {
    nlohmann::json a = was, b = meta;
    a.erase("model_path");
    b.erase("model_path");
    const std::string diff = sidecar_difference(a, b);
    if (!diff.empty()) {
      std::fprintf(stderr,
                   "brisk batch: error: '%s' was made by a different run: %s. Use another output, or delete it and "
                   "'%s' to start again\n",
                   s.output_path.c_str(), diff.c_str(), sidecar_path(s.output_path).c_str());
      return 1;
    }
  } else {
    FILE* f = std::fopen(s.output_path.c_str(), "rb");
    const bool has_bytes = f && std::fgetc(f) != EOF;
    if (f) std::fclose(f);
    if (has_bytes) {
      std::fprintf(stderr,
                   "brisk batch: error: '%s' exists but has no '%s', so it was not written by brisk batch; refusing "
                   "to append to it\n",
                   s.output_path.c_str(), sidecar_path(s.output_path).c_str());
      return 1;
    }
    if (!write_sidecar(s.output_path, meta, &error)) {
      std::fprintf(stderr, "brisk batch: error: %s\n", error.c_str());
      return 1;
    }
  }
  Journal journal;
  size_t done = 0;
  if (!journal.open(s.output_path, expected, &done, &error)) {
    std::fprintf(stderr, "brisk batch: error: %s\n", error.c_str());
    return 1;
  }
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  Runner runner(s, model, in, journal, done);
  return runner.run();
}

}  // namespace brisk::tools::batch
