// SPDX-License-Identifier: MIT
// A sequence's state on disk: its tokens, the KV cache rows of those it
// evaluated, the logits after the last of them and the sampler's state (for
// sessions; for an engine sequence saved while generating, with the rest of
// that generation), so a later process continues exactly where this one
// stopped.
//
// File layout (little-endian): "BRISKSQ" and the format version digit, u32
// header length, a JSON header (model identity, cache types and shape,
// counts, sampler, generation), the tokens (i32), the logits (f32), the KV
// rows (per layer, per KV head: K rows 0..n_cached-1, then V rows), and the
// XXH3-128 of everything before it. Written atomically; a file whose
// checksum, model identity, cache types or shape do not match is refused
// with the reason.
//
// Version 1: every token has its KV rows. Version 2 adds "n_cached" (the
// tokens after it are evaluated again on load: a generating sequence's
// sampled token, a finished sequence's whole text, whose cache is gone),
// "generation" and the OpenAI-style penalties of "sampler". The writer uses
// version 1 whenever the state fits it, so older libraries still read those.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/session.h"
#include "sample/sampler.h"

namespace brisk {

struct SavedSequence {
  std::string model_identity;
  TensorType k_type = TensorType::F16, v_type = TensorType::F16;
  int n_layer = 0, n_head_kv = 0;
  uint64_t k_row_bytes = 0, v_row_bytes = 0;
  std::vector<int32_t> tokens;
  size_t n_cached = 0;        // leading tokens with KV rows; the rest are queued on load
  std::vector<float> logits;  // after token n_cached-1 (none if n_cached is 0)
  bool has_sampler = false;
  SamplerParams sampler;
  std::string rng;              // the generator's state as text (std::mt19937_64 <<)
  std::vector<int32_t> recent;  // tokens the repetition penalty looks back at
  std::vector<uint8_t> kv;
  // An engine sequence's generation, saved between steps (with the sampler
  // fields above); tokens.back() is its last sampled token, not yet evaluated.
  bool has_generation = false;
  int max_tokens = 0;
  bool stop_at_eos = true;
  std::vector<int32_t> generated;  // so far, tokens.back() included
  std::string utf8;                // bytes of a character not yet complete
};

void write_seq_state(const std::string& path, const SavedSequence& s);
// Reads and verifies the checksum; throws BRISK_ERR_CHECKSUM (damaged),
// BRISK_ERR_BAD_FORMAT (not a state file) or BRISK_ERR_NOT_FOUND.
SavedSequence read_seq_state(const std::string& path);

// Reaches into Sequence, Session and Sampler (their friend).
struct SeqStateAccess {
  // An engine sequence that is idle (its tokens evaluated), generating
  // (between steps: with its generation) or finished (its text only: the
  // cache went with its slot).
  static SavedSequence capture(const Sequence& seq);
  // A new sequence in a free slot holding the saved context; tokens without
  // cache rows are queued (prefill), and a saved generation is kept for
  // Sequence::resume.
  static Sequence* restore(Engine& engine, const SavedSequence& s);
  // A session's context; `tokens` are the tokens it evaluated (sessions do
  // not keep them) and must number its position. sampler may be null.
  static SavedSequence capture(const Session& session, const Sampler* sampler, const int32_t* tokens, size_t n_tokens);
  // Replaces the session's context (and the sampler's state, when both the
  // file and the call have one).
  static void restore(Session& session, Sampler* sampler, const SavedSequence& s);

 private:
  static void sampler_out(const Sampler& sampler, SavedSequence& s);
  static void sampler_in(const SavedSequence& s, Sampler& sampler);
};

}  // namespace brisk
