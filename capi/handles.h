// SPDX-License-Identifier: MIT
// What the opaque handles of brisk.h hold, and how a bad handle is caught.
//
// Every handle begins with a HandleHeader: a magic number per type while it
// lives, kMagicDead once freed, and a generation (a process-wide serial) that
// a child records of its parent. A freed handle's memory is not returned at
// once: its shell (the small struct, its contents already released) waits in
// a bounded quarantine, so a call with a handle freed recently, or with a
// handle of the wrong type, reads a magic that does not match and returns
// BRISK_ERR_INVALID_ARGUMENT instead of touching freed memory. A pointer
// freed long ago (past the quarantine) or a foreign one cannot be caught
// reliably; the check is best-effort where it is cheap.
//
// A model is reference-counted by its sessions and engines: brisk_model_close
// with live ones defers the free until the last goes. A session or engine
// freed inside one of its own callbacks is freed when the call that ran the
// callback returns (`busy` counts those calls).
#pragma once
#include <atomic>
#include <cstring>
#include <memory>
#include <vector>

#include "brisk/brisk.h"
#include "guard.h"
#include "engine/engine.h"
#include "engine/session.h"
#include "model/model.h"
#include "sample/sampler.h"

namespace brisk::capi {

enum : uint32_t {
  kMagicModel = 0x4d4b5242u,           // "BRKM"
  kMagicModelClosed = 0x434b5242u,     // closed by the caller, alive for its sessions/engines
  kMagicSession = 0x534b5242u,
  kMagicEngine = 0x454b5242u,
  kMagicSequence = 0x514b5242u,
  kMagicSampler = 0x504b5242u,
  kMagicPplResult = 0x4c4b5242u,
  kMagicCompareResult = 0x524b5242u,
  kMagicDead = 0xdeadb15cu,
};

struct HandleHeader {
  uint32_t magic;
  uint32_t generation;
  explicit HandleHeader(uint32_t m);
};

// Throws BRISK_ERR_INVALID_ARGUMENT naming what is wrong with p as a `what`
// (NULL, freed, closed, another handle type, not a handle).
void check_handle(const void* p, uint32_t magic, const char* what);

// Marks the shell dead and queues it; the oldest shells past the bound are
// deleted. The caller has released the contents already.
void quarantine(HandleHeader* h, void (*destroy)(HandleHeader*)) noexcept;
template <class T>
void retire(T* h) noexcept {
  quarantine(h, [](HandleHeader* p) { delete static_cast<T*>(p); });
}

}  // namespace brisk::capi

struct brisk_model : brisk::capi::HandleHeader {
  brisk_model() : HandleHeader(brisk::capi::kMagicModel) {}
  std::unique_ptr<brisk::Model> model;
  brisk_model_options options;
  mutable std::atomic<int> refs{1};  // the caller's, plus one per session and engine
};

struct brisk_session : brisk::capi::HandleHeader {
  brisk_session() : HandleHeader(brisk::capi::kMagicSession) {}
  const brisk_model* owner = nullptr;
  brisk_session_options options;
  std::unique_ptr<brisk::Session> session;
  int busy = 0;                 // calls in progress that may run its callbacks
  bool free_requested = false;  // freed inside one of them
};

struct brisk_engine : brisk::capi::HandleHeader {
  brisk_engine() : HandleHeader(brisk::capi::kMagicEngine) {}
  const brisk_model* owner = nullptr;
  brisk_engine_options options;
  std::unique_ptr<brisk::Engine> engine;
  std::vector<brisk_sequence*> sequences;  // freed with the engine
  int busy = 0;
  bool free_requested = false;
};

struct brisk_sequence : brisk::capi::HandleHeader {
  brisk_sequence() : HandleHeader(brisk::capi::kMagicSequence) {}
  brisk_engine* owner = nullptr;
  uint32_t owner_generation = 0;
  brisk::Sequence* seq = nullptr;
  brisk_generate_options gen;  // keeps the callback and its user_data
};

struct brisk_sampler : brisk::capi::HandleHeader {
  brisk_sampler() : HandleHeader(brisk::capi::kMagicSampler) {}
  std::unique_ptr<brisk::Sampler> sampler;
};

namespace brisk::capi {
// A newer program's struct is larger than ours: its extra fields are fine
// while they hold their defaults (zero), and refused otherwise, since this
// library would silently ignore what they ask for.
void check_unknown_tail(const void* given, size_t given_size, size_t known_size);

// The checked handle (same pointer), for use as `h = checked(h, "engine")`.
inline const brisk_model* checked(const brisk_model* m, const char* what) {
  check_handle(m, kMagicModel, what);
  return m;
}
template <class H>
H* checked_session(H* s) {
  check_handle(s, kMagicSession, "session");
  return s;
}
template <class H>
H* checked_engine(H* e) {
  check_handle(e, kMagicEngine, "engine");
  return e;
}
template <class H>
H* checked_sequence(H* s) {
  check_handle(s, kMagicSequence, "sequence");
  if (s->owner->magic != kMagicEngine || s->owner->generation != s->owner_generation)
    fail(BRISK_ERR_INVALID_ARGUMENT, "the sequence's engine was freed");
  return s;
}
template <class H>
H* checked_sampler(H* s) {
  check_handle(s, kMagicSampler, "sampler");
  return s;
}

// A sequence's token callback from generate options (none if token_fn is NULL).
Sequence::TokenCallback token_callback(brisk_engine* e, const brisk_generate_options& g);

// A model's sessions and engines hold it; the last release frees a closed one.
void hold_model(const brisk_model* m);
void release_model(const brisk_model* m) noexcept;

// Counts a call that may run a handle's callbacks; when the outermost ends
// and the handle was freed inside, frees it.
void destroy_session(brisk_session* s) noexcept;
void destroy_engine(brisk_engine* e) noexcept;
template <class H, void (*Destroy)(H*)>
class Busy {
 public:
  explicit Busy(H* h) : h_(h) { ++h_->busy; }
  ~Busy() {
    if (--h_->busy == 0 && h_->free_requested) Destroy(h_);
  }
  Busy(const Busy&) = delete;
  Busy& operator=(const Busy&) = delete;

 private:
  H* h_;
};
using SessionBusy = Busy<brisk_session, destroy_session>;
using EngineBusy = Busy<brisk_engine, destroy_engine>;

// The mlock and no_mmap fields of every options struct that reads a model
// file, as the loader takes them: one meaning for all of them.
template <class T>
MapOptions map_options_of(const T& o) {
  MapOptions m;
  m.lock = o.mlock != 0;
  m.read_into_memory = o.no_mmap != 0;
  return m;
}

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
