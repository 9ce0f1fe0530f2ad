// SPDX-License-Identifier: MIT
// A sequence's state on disk: its evaluated tokens, their KV cache rows, the
// logits after the last token and (for sessions) the sampler's state, so a
// later process continues exactly where this one stopped.
//
// File layout (little-endian): "BRISKSQ1", u32 header length, a JSON header
// (model identity, cache types and shape, counts, sampler), the tokens
// (i32), the logits (f32), the KV rows (per layer, per KV head: K rows
// 0..n-1, then V rows), and the XXH3-128 of everything before it. Written
// atomically; a file whose checksum, model identity, cache types or shape do
// not match is refused with the reason.
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
  std::vector<float> logits;  // after the last token
  bool has_sampler = false;
  SamplerParams sampler;
  std::string rng;              // the generator's state as text (std::mt19937_64 <<)
  std::vector<int32_t> recent;  // tokens the repetition penalty looks back at
  std::vector<uint8_t> kv;
};

void write_seq_state(const std::string& path, const SavedSequence& s);
// Reads and verifies the checksum; throws BRISK_ERR_CHECKSUM (damaged),
// BRISK_ERR_BAD_FORMAT (not a state file) or BRISK_ERR_NOT_FOUND.
SavedSequence read_seq_state(const std::string& path);

// Reaches into Sequence, Session and Sampler (their friend).
struct SeqStateAccess {
  // An idle engine sequence (its tokens evaluated, not generating).
  static SavedSequence capture(const Sequence& seq);
  // A new idle sequence in a free slot holding the saved context.
  static Sequence* restore(Engine& engine, const SavedSequence& s);
  // A session's context; `tokens` are the tokens it evaluated (sessions do
  // not keep them) and must number its position. sampler may be null.
  static SavedSequence capture(const Session& session, const Sampler* sampler, const int32_t* tokens, size_t n_tokens);
  // Replaces the session's context (and the sampler's state, when both the
  // file and the call have one).
  static void restore(Session& session, Sampler* sampler, const SavedSequence& s);
};

}  // namespace brisk
