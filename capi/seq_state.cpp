// SPDX-License-Identifier: MIT
// brisk_*_save_state / brisk_*_load_state: contexts saved to disk and resumed.
#include "engine/seq_state.h"
#include "guard.h"
#include "handles.h"

using brisk::capi::checked_engine;
using brisk::capi::checked_sampler;
using brisk::capi::checked_sequence;
using brisk::capi::checked_session;
using brisk::capi::copy_out;
using brisk::capi::EngineBusy;
using brisk::capi::guard;
using brisk::capi::require;

extern "C" {

brisk_status brisk_sequence_save_state(const brisk_sequence* s, const char* path) {
  return guard([&] {
    checked_sequence(s);
    require(path, "path");
    brisk::write_seq_state(path, brisk::SeqStateAccess::capture(*s->seq));
  });
}

brisk_status brisk_sequence_load_state(brisk_engine* e, const char* path, brisk_sequence** out) {
  return guard([&] {
    require(out, "out_sequence");
    *out = nullptr;
    checked_engine(e);
    require(path, "path");
    const brisk::SavedSequence saved = brisk::read_seq_state(path);
    auto h = std::make_unique<brisk_sequence>();
    h->owner = e;
    h->owner_generation = e->generation;
    brisk_generate_options_init(&h->gen);
    h->seq = brisk::SeqStateAccess::restore(*e->engine, saved);
    e->sequences.push_back(h.get());
    *out = h.release();
  });
}

brisk_status brisk_sequence_resume(brisk_sequence* s, const brisk_generate_options* options) {
  return guard([&] {
    checked_sequence(s);
    const brisk_generate_options g =
        brisk::capi::merge_options(options, [](brisk_generate_options* p) { brisk_generate_options_init(p); });
    brisk_engine* e = s->owner;
    brisk::Sequence::TokenCallback cb = brisk::capi::token_callback(e, g);
    s->seq->check_can_resume();  // a refused call changes nothing
    s->gen = g;
    // Loaded and already stepped, it samples its next token here.
    EngineBusy busy(e);
    s->seq->resume(std::move(cb));
  });
}

brisk_status brisk_session_save_state(const brisk_session* s, const brisk_sampler* sampler, const int32_t* tokens,
                                      size_t n_tokens, const char* path) {
  return guard([&] {
    checked_session(s);
    if (sampler) checked_sampler(sampler);
    require(path, "path");
    if (n_tokens) require(tokens, "tokens");
    brisk::write_seq_state(path, brisk::SeqStateAccess::capture(*s->session, sampler ? sampler->sampler.get() : nullptr,
                                                                tokens, n_tokens));
  });
}

brisk_status brisk_session_load_state(brisk_session* s, brisk_sampler* sampler, const char* path) {
  return guard([&] {
    checked_session(s);
    if (sampler) checked_sampler(sampler);
    require(path, "path");
    const brisk::SavedSequence saved = brisk::read_seq_state(path);
    brisk::SeqStateAccess::restore(*s->session, sampler ? sampler->sampler.get() : nullptr, saved);
  });
}

brisk_status brisk_state_file_tokens(const char* path, int32_t* tokens, size_t cap, size_t* needed) {
  return guard([&] {
    require(path, "path");
    const brisk::SavedSequence saved = brisk::read_seq_state(path);
    copy_out(saved.tokens.data(), saved.tokens.size(), tokens, cap, needed);
  });
}

}  // extern "C"
