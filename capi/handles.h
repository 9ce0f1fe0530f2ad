// What the opaque handles of brisk.h hold.
#pragma once
#include <cstring>
#include <memory>
#include <vector>

#include "brisk/brisk.h"
#include "guard.h"
#include "engine/engine.h"
#include "engine/session.h"
#include "model/model.h"
#include "sample/sampler.h"

struct brisk_model {
  std::unique_ptr<brisk::Model> model;
  brisk_model_options options;
};

struct brisk_session {
  const brisk_model* owner;
  brisk_session_options options;
  std::unique_ptr<brisk::Session> session;
};

struct brisk_engine {
  const brisk_model* owner;
  brisk_engine_options options;
  std::unique_ptr<brisk::Engine> engine;
  std::vector<brisk_sequence*> sequences;  // freed with the engine
};

struct brisk_sequence {
  brisk_engine* owner;
  brisk::Sequence* seq;
  brisk_generate_options gen;  // keeps the callback and its user_data
};

struct brisk_sampler {
  std::unique_ptr<brisk::Sampler> sampler;
};

namespace brisk::capi {
// A newer program's struct is larger than ours: its extra fields are fine
// while they hold their defaults (zero), and refused otherwise, since this
// library would silently ignore what they ask for.
void check_unknown_tail(const void* given, size_t given_size, size_t known_size);

// Copies the caller's options over the defaults, honouring struct_size so an
// older caller's smaller struct works with a newer library.
template <class T, class Init>
T merge_options(const T* given, Init init) {
  T o;
  init(&o);
  if (given) {
    size_t n = given->struct_size < sizeof(T) ? given->struct_size : sizeof(T);
    if (n < sizeof(uint32_t))
      fail(BRISK_ERR_INVALID_ARGUMENT, "options struct_size is too small; call the *_options_init function first");
    if (given->struct_size > sizeof(T)) check_unknown_tail(given, given->struct_size, sizeof(T));
    std::memcpy(&o, given, n);
    o.struct_size = sizeof(T);
  }
  return o;
}
}  // namespace brisk::capi
