// SPDX-License-Identifier: MIT
#include <algorithm>
#include "engine/seq_state.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "bundle/hash.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "model/identity.h"

namespace brisk {

namespace {

constexpr char kMagic[7] = {'B', 'R', 'I', 'S', 'K', 'S', 'Q'};  // then the version digit
constexpr int kNewestVersion = 2;
constexpr uint32_t kMaxHeader = 1u << 24;

void put(std::string& out, const void* p, size_t n) { out.append(static_cast<const char*>(p), n); }

std::mt19937_64 parse_rng(const std::string& text) {
  std::mt19937_64 rng;
  std::istringstream in(text);
  in >> rng;
  if (in.fail()) fail(BRISK_ERR_BAD_FORMAT, "the state's sampler generator cannot be read");
  return rng;
}

void check_tokens(const std::vector<int32_t>& tokens, int n_vocab) {
  for (int32_t t : tokens)
    if (t < 0 || t >= n_vocab) fail(BRISK_ERR_BAD_FORMAT, "the state holds a token outside the vocabulary");
}

// The sampler and generation must be usable before anything is changed.
void check_sampler(const SavedSequence& s, int n_vocab) {
  const SamplerParams& p = s.sampler;
  if (!(p.repeat_penalty > 0) || p.temperature != p.temperature || p.top_p != p.top_p || p.min_p != p.min_p ||
      p.presence_penalty != p.presence_penalty || p.frequency_penalty != p.frequency_penalty ||
      s.recent.size() > static_cast<size_t>(std::max(p.repeat_last_n, 0)))
    fail(BRISK_ERR_BAD_FORMAT, "the state's sampler settings are invalid");
  check_tokens(s.recent, n_vocab);
  parse_rng(s.rng);
}

void check_generation(const SavedSequence& s, int n_vocab) {
  // The last sampled token is queued, or already evaluated (a loaded
  // generation stepped before it was resumed).
  const bool last_queued = s.n_cached + 1 == s.tokens.size();
  if (!s.has_sampler || s.n_cached == 0 || (!last_queued && s.n_cached != s.tokens.size()) || s.generated.empty() ||
      s.generated.back() != s.tokens.back() || s.max_tokens <= 0 ||
      s.generated.size() >= static_cast<size_t>(s.max_tokens) || s.utf8.size() > 3 || !Utf8Stream().push(s.utf8).empty())
    fail(BRISK_ERR_BAD_FORMAT, "the state's generation is inconsistent");
  check_tokens(s.generated, n_vocab);
}

// Checks that a saved state fits this model and this cache.
void check_fits(const SavedSequence& s, const Model& model, const KVCache& cache, int n_ctx) {
  const std::string id = model_identity(model.file());
  if (s.model_identity != id)
    fail(BRISK_ERR_INVALID_ARGUMENT, "the state was saved with another model (identity " + s.model_identity +
                                         ", this model's is " + id + ")");
  if (s.k_type != cache.k_type() || s.v_type != cache.v_type())
    fail(BRISK_ERR_INVALID_ARGUMENT, std::string("the state's KV cache is ") + type_name(s.k_type) + "/" +
                                         type_name(s.v_type) + ", this one is " + type_name(cache.k_type()) + "/" +
                                         type_name(cache.v_type()) + " (use the same cache types)");
  const ModelConfig& c = model.config();
  if (s.n_layer != c.n_layer || s.n_head_kv != c.n_head_kv || s.k_row_bytes != cache.k_head_row_bytes() ||
      s.v_row_bytes != cache.v_head_row_bytes())
    fail(BRISK_ERR_INVALID_ARGUMENT, "the state's cache shape does not match this model's");
  if (s.tokens.size() > static_cast<size_t>(n_ctx))
    fail(BRISK_ERR_CONTEXT_FULL, "the state holds " + std::to_string(s.tokens.size()) +
                                     " tokens; this context holds " + std::to_string(n_ctx));
  if (s.logits.size() != (s.n_cached ? static_cast<size_t>(c.n_vocab) : 0))
    fail(BRISK_ERR_BAD_FORMAT, "the state's logits do not match the model's vocabulary");
  check_tokens(s.tokens, c.n_vocab);
  if (s.has_sampler) check_sampler(s, c.n_vocab);
  if (s.has_generation) check_generation(s, c.n_vocab);
}

SavedSequence describe_cache(const Model& model, const KVCache& cache) {
  SavedSequence s;
  s.model_identity = model_identity(model.file());
  s.k_type = cache.k_type();
  s.v_type = cache.v_type();
  s.n_layer = model.config().n_layer;
  s.n_head_kv = model.config().n_head_kv;
  s.k_row_bytes = cache.k_head_row_bytes();
  s.v_row_bytes = cache.v_head_row_bytes();
  return s;
}

// Calls fn(k, v, n) for each layer and KV head of a slot: its K and V rows
// 0..n-1, which are consecutive in the cache (see kv_cache.h). The cache's
// memory is its own writable heap memory; it hands out const pointers only
// because attention reads through them.
template <class Fn>
void for_each_head(const KVCache& cache, int slot, const SavedSequence& s, Fn fn) {
  for (int l = 0; l < s.n_layer; ++l)
    for (int h = 0; h < s.n_head_kv; ++h)
      fn(const_cast<uint8_t*>(cache.k_row(l, slot, h, 0)), const_cast<uint8_t*>(cache.v_row(l, slot, h, 0)));
}

void rows_out(const KVCache& cache, int slot, SavedSequence& s) {
  const size_t kb = s.n_cached * s.k_row_bytes, vb = s.n_cached * s.v_row_bytes;
  s.kv.resize((kb + vb) * static_cast<size_t>(s.n_layer * s.n_head_kv));
  uint8_t* p = s.kv.data();
  for_each_head(cache, slot, s, [&](const uint8_t* k, const uint8_t* v) {
    std::memcpy(p, k, kb);
    std::memcpy(p + kb, v, vb);
    p += kb + vb;
  });
}

void rows_in(const KVCache& cache, int slot, const SavedSequence& s) {
  const size_t kb = s.n_cached * s.k_row_bytes, vb = s.n_cached * s.v_row_bytes;
  const uint8_t* p = s.kv.data();
  for_each_head(cache, slot, s, [&](uint8_t* k, uint8_t* v) {
    std::memcpy(k, p, kb);
    std::memcpy(v, p + kb, vb);
    p += kb + vb;
  });
}

// The oldest format that holds the state, so older libraries read it.
int format_version(const SavedSequence& s) {
  const bool penalties = s.has_sampler && (s.sampler.presence_penalty != 0 || s.sampler.frequency_penalty != 0);
  return s.n_cached == s.tokens.size() && !s.has_generation && !penalties ? 1 : 2;
}

}  // namespace

void SeqStateAccess::sampler_out(const Sampler& sampler, SavedSequence& s) {
  s.has_sampler = true;
  s.sampler = sampler.p_;
  std::ostringstream rng;
  rng << sampler.rng_;
  s.rng = rng.str();
  s.recent.assign(sampler.recent_.begin(), sampler.recent_.end());
}

void SeqStateAccess::sampler_in(const SavedSequence& s, Sampler& sampler) {
  sampler.p_ = s.sampler;
  sampler.rng_ = parse_rng(s.rng);
  sampler.recent_.assign(s.recent.begin(), s.recent.end());
}

void write_seq_state(const std::string& path, const SavedSequence& s) {
  const int version = format_version(s);
  nlohmann::ordered_json h;
  h["model_identity"] = s.model_identity;
  h["k_type"] = static_cast<int>(s.k_type);
  h["v_type"] = static_cast<int>(s.v_type);
  h["n_layer"] = s.n_layer;
  h["n_head_kv"] = s.n_head_kv;
  h["k_row_bytes"] = s.k_row_bytes;
  h["v_row_bytes"] = s.v_row_bytes;
  h["n_tokens"] = s.tokens.size();
  if (version >= 2) h["n_cached"] = s.n_cached;
  h["n_logits"] = s.logits.size();
  h["kv_bytes"] = s.kv.size();
  if (s.has_sampler) {
    const SamplerParams& p = s.sampler;
    h["sampler"] = {{"temperature", p.temperature}, {"top_k", p.top_k}, {"top_p", p.top_p}, {"min_p", p.min_p},
                    {"repeat_penalty", p.repeat_penalty}, {"repeat_last_n", p.repeat_last_n}, {"seed", p.seed},
                    {"rng", s.rng}, {"recent", s.recent}};
    if (version >= 2) {
      h["sampler"]["presence_penalty"] = p.presence_penalty;
      h["sampler"]["frequency_penalty"] = p.frequency_penalty;
    }
  }
  if (s.has_generation)
    h["generation"] = {{"max_tokens", s.max_tokens}, {"stop_at_eos", s.stop_at_eos}, {"generated", s.generated},
                       {"utf8", std::vector<uint8_t>(s.utf8.begin(), s.utf8.end())}};
  const std::string header = h.dump();
  std::string out;
  out.reserve(64 + header.size() + s.tokens.size() * 4 + s.logits.size() * 4 + s.kv.size());
  put(out, kMagic, sizeof kMagic);
  out += static_cast<char>('0' + version);
  const uint32_t hl = static_cast<uint32_t>(header.size());
  put(out, &hl, 4);
  out += header;
  put(out, s.tokens.data(), s.tokens.size() * 4);
  put(out, s.logits.data(), s.logits.size() * 4);
  put(out, s.kv.data(), s.kv.size());
  const bundle::Hash128 sum = bundle::hash_bytes(out.data(), out.size());
  put(out, sum.bytes, sizeof sum.bytes);
  AtomicFile f(path);
  f.write(out.data(), out.size());
  f.commit();
}

SavedSequence read_seq_state(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(BRISK_ERR_NOT_FOUND, "cannot open state file '" + path + "': " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string b = ss.str();
  const std::string where = "state file '" + path + "': ";
  if (b.size() < sizeof kMagic + 1 + 4 + 16 || std::memcmp(b.data(), kMagic, sizeof kMagic) != 0 || b[7] < '1' ||
      b[7] > '9')
    fail(BRISK_ERR_BAD_FORMAT, where + "not a brisk sequence state");
  const size_t body = b.size() - 16;
  const bundle::Hash128 sum = bundle::hash_bytes(b.data(), body);
  if (std::memcmp(sum.bytes, b.data() + body, 16) != 0)
    fail(BRISK_ERR_CHECKSUM, where + "checksum mismatch: the file is damaged or was cut short");
  const int version = b[7] - '0';
  if (version > kNewestVersion)
    fail(BRISK_ERR_UNSUPPORTED, where + "format version " + std::to_string(version) +
                                    " is newer than this library reads (1 to " + std::to_string(kNewestVersion) +
                                    "); load it with a newer brisk");
  uint32_t hl = 0;
  std::memcpy(&hl, b.data() + 8, 4);
  if (hl > kMaxHeader || 12 + static_cast<size_t>(hl) > body) fail(BRISK_ERR_BAD_FORMAT, where + "bad header length");
  const nlohmann::json h = nlohmann::json::parse(b.begin() + 12, b.begin() + 12 + hl, nullptr, false);
  SavedSequence s;
  try {
    if (h.is_discarded() || !h.is_object()) throw std::runtime_error("header is not JSON");
    s.model_identity = h.at("model_identity").get<std::string>();
    s.k_type = static_cast<TensorType>(h.at("k_type").get<int>());
    s.v_type = static_cast<TensorType>(h.at("v_type").get<int>());
    s.n_layer = h.at("n_layer").get<int>();
    s.n_head_kv = h.at("n_head_kv").get<int>();
    s.k_row_bytes = h.at("k_row_bytes").get<uint64_t>();
    s.v_row_bytes = h.at("v_row_bytes").get<uint64_t>();
    const uint64_t n_tokens = h.at("n_tokens").get<uint64_t>(), n_logits = h.at("n_logits").get<uint64_t>(),
                   kv_bytes = h.at("kv_bytes").get<uint64_t>();
    const uint64_t n_cached = version >= 2 ? h.at("n_cached").get<uint64_t>() : n_tokens;
    // Sizes must add up to the file before anything is allocated from them.
    const uint64_t left = body - 12 - hl;
    uint64_t row = 0, rows = 0;
    if (n_tokens > left / 4 || n_logits > left / 4 || n_tokens * 4 + n_logits * 4 > left || n_cached > n_tokens ||
        kv_bytes != left - n_tokens * 4 - n_logits * 4 || s.n_layer <= 0 || s.n_head_kv <= 0 ||
        __builtin_add_overflow(s.k_row_bytes, s.v_row_bytes, &row) ||
        __builtin_mul_overflow(row, static_cast<uint64_t>(s.n_layer) * static_cast<uint64_t>(s.n_head_kv), &row) ||
        __builtin_mul_overflow(row, n_cached, &rows) || kv_bytes != rows)
      throw std::runtime_error("section sizes do not add up");
    s.n_cached = n_cached;
    const char* p = b.data() + 12 + hl;
    s.tokens.resize(n_tokens);
    std::memcpy(s.tokens.data(), p, n_tokens * 4);
    p += n_tokens * 4;
    s.logits.resize(n_logits);
    std::memcpy(s.logits.data(), p, n_logits * 4);
    p += n_logits * 4;
    s.kv.assign(p, p + kv_bytes);
    if (h.contains("sampler")) {
      const nlohmann::json& sm = h["sampler"];
      s.has_sampler = true;
      s.sampler.temperature = sm.at("temperature").get<float>();
      s.sampler.top_k = sm.at("top_k").get<int>();
      s.sampler.top_p = sm.at("top_p").get<float>();
      s.sampler.min_p = sm.at("min_p").get<float>();
      s.sampler.repeat_penalty = sm.at("repeat_penalty").get<float>();
      s.sampler.repeat_last_n = sm.at("repeat_last_n").get<int>();
      s.sampler.seed = sm.at("seed").get<uint64_t>();
      // Version 1 files did not record them (their samplers ran without).
      s.sampler.presence_penalty = sm.value("presence_penalty", 0.0f);
      s.sampler.frequency_penalty = sm.value("frequency_penalty", 0.0f);
      s.rng = sm.at("rng").get<std::string>();
      s.recent = sm.at("recent").get<std::vector<int32_t>>();
    }
    if (version >= 2 && h.contains("generation")) {
      const nlohmann::json& g = h["generation"];
      s.has_generation = true;
      s.max_tokens = g.at("max_tokens").get<int>();
      s.stop_at_eos = g.at("stop_at_eos").get<bool>();
      s.generated = g.at("generated").get<std::vector<int32_t>>();
      const std::vector<uint8_t> utf8 = g.at("utf8").get<std::vector<uint8_t>>();
      s.utf8.assign(utf8.begin(), utf8.end());
    }
  } catch (const std::exception& e) {
    fail(BRISK_ERR_BAD_FORMAT, where + e.what());
  }
  return s;
}

SavedSequence SeqStateAccess::capture(const Sequence& seq) {
  const Engine& e = *seq.engine_;
  SavedSequence s = describe_cache(e.model(), e.cache());
  if (seq.state_ == SeqState::finished) {
    // The cache went with the slot: the text is saved, to be evaluated
    // again on load. A last token sampled at max_tokens belongs to it, as
    // a session keeps it, if it fits.
    s.tokens = seq.context_;
    if (seq.stop_ == StopReason::max_tokens && seq.unevaluated_ >= 0 && s.tokens.size() < static_cast<size_t>(e.n_ctx()))
      s.tokens.push_back(seq.unevaluated_);
    if (s.tokens.empty()) fail(BRISK_ERR_INVALID_ARGUMENT, "the sequence finished before evaluating anything");
    return s;
  }
  // A generation in progress, or one loaded and not resumed yet: between
  // steps its last sampled token is queued (or, loaded and stepped,
  // evaluated); inside a step its fields are half updated.
  const bool generating = seq.state_ == SeqState::generating || seq.resumable_;
  const size_t queued = seq.pending_.size() - seq.pending_done_;
  if (generating && e.in_step())
    fail(BRISK_ERR_INVALID_ARGUMENT, "save a generating sequence between steps, not inside a callback of its engine");
  const bool ok = generating ? seq.sampler_ && ((queued == 1 && seq.pending_done_ == 0) ||
                                                (queued == 0 && seq.state_ == SeqState::idle))
                             : seq.state_ == SeqState::idle && queued == 0;
  if (!ok || seq.slot_ < 0)
    fail(BRISK_ERR_INVALID_ARGUMENT,
         "save a sequence when it is idle, generating (between steps) or finished, not while its tokens are read");
  s.tokens = seq.context_;
  s.n_cached = s.tokens.size();
  if (queued) s.tokens.push_back(seq.pending_[0]);
  s.logits = seq.logits_;
  if (s.logits.empty()) fail(BRISK_ERR_INVALID_ARGUMENT, "the sequence has evaluated nothing yet");
  rows_out(e.cache(), seq.slot_, s);
  if (generating) {
    sampler_out(*seq.sampler_, s);
    s.has_generation = true;
    s.max_tokens = seq.max_tokens_;
    s.stop_at_eos = seq.stop_at_eos_;
    s.generated = seq.generated_;
    s.utf8 = seq.utf8_.pending();
  }
  return s;
}

Sequence* SeqStateAccess::restore(Engine& engine, const SavedSequence& s) {
  check_fits(s, engine.model(), engine.cache(), engine.n_ctx());
  Sequence* seq = engine.create_sequence();
  rows_in(engine.cache(), seq->slot_, s);
  seq->pos_ = static_cast<int>(s.n_cached);
  seq->context_.assign(s.tokens.begin(), s.tokens.begin() + static_cast<std::ptrdiff_t>(s.n_cached));
  seq->logits_ = s.logits;
  if (s.n_cached < s.tokens.size()) {
    seq->pending_.assign(s.tokens.begin() + static_cast<std::ptrdiff_t>(s.n_cached), s.tokens.end());
    seq->state_ = SeqState::prefill;
  }
  if (s.has_generation) {
    seq->own_sampler_ = std::make_unique<Sampler>(s.sampler);
    sampler_in(s, *seq->own_sampler_);
    seq->sampler_ = seq->own_sampler_.get();
    seq->max_tokens_ = s.max_tokens;
    seq->stop_at_eos_ = s.stop_at_eos;
    seq->generated_ = s.generated;
    seq->utf8_.push(s.utf8);  // an incomplete character: held, nothing returned
    seq->resumable_ = true;
  }
  return seq;
}

// A session is a one-slot engine whose sequence persists: its state is that
// sequence's, plus the sampler the caller keeps.
SavedSequence SeqStateAccess::capture(const Session& session, const Sampler* sampler, const int32_t* tokens,
                                      size_t n_tokens) {
  const Sequence& seq = *session.seq_;
  if (n_tokens != seq.context_.size())
    fail(BRISK_ERR_INVALID_ARGUMENT, "the session holds " + std::to_string(seq.context_.size()) + " tokens but " +
                                         std::to_string(n_tokens) + " were given");
  if (!std::equal(tokens, tokens + n_tokens, seq.context_.begin()))
    fail(BRISK_ERR_INVALID_ARGUMENT, "the tokens given are not the ones the session evaluated");
  if (seq.state_ != SeqState::idle) fail(BRISK_ERR_INVALID_ARGUMENT, "save a session only when it is idle");
  SavedSequence s = capture(seq);
  if (sampler) sampler_out(*sampler, s);
  return s;
}

void SeqStateAccess::restore(Session& session, Sampler* sampler, const SavedSequence& s) {
  const Engine& e = session.engine_;
  e.check_not_in_step("restoring a session");
  Sequence& seq = *session.seq_;
  check_fits(s, e.model(), e.cache(), e.n_ctx());
  if (s.tokens.empty()) fail(BRISK_ERR_BAD_FORMAT, "the state holds no tokens");
  if (s.n_cached != s.tokens.size() || s.has_generation)
    fail(BRISK_ERR_INVALID_ARGUMENT, "the state was saved from an engine sequence while generating or finished; "
                                     "load it with brisk_sequence_load_state");
  if (seq.state_ != SeqState::idle || seq.pending_.size() != seq.pending_done_)
    fail(BRISK_ERR_INVALID_ARGUMENT, "restore a session only when it is idle");
  rows_in(e.cache(), seq.slot_, s);
  seq.pos_ = static_cast<int>(s.tokens.size());
  seq.context_ = s.tokens;
  seq.logits_ = s.logits;
  if (sampler && s.has_sampler) sampler_in(s, *sampler);
}

}  // namespace brisk
