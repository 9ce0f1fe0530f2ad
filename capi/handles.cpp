// SPDX-License-Identifier: MIT
// Handle checks, the quarantine of freed handle shells, model reference
// counts and deferred frees (see handles.h).
#include "handles.h"

#include <deque>
#include <mutex>
#include <string>

namespace brisk::capi {

namespace {

std::atomic<uint32_t> g_generation{1};

const char* type_name_of(uint32_t magic) {
  switch (magic) {
    case kMagicModel: return "brisk_model";
    case kMagicSession: return "brisk_session";
    case kMagicEngine: return "brisk_engine";
    case kMagicSequence: return "brisk_sequence";
    case kMagicSampler: return "brisk_sampler";
    case kMagicPplResult: return "brisk_ppl_result";
    case kMagicCompareResult: return "brisk_compare_result";
    default: return nullptr;
  }
}

// Freed shells, oldest first. Bounded: a shell is a few hundred bytes, and a
// program that frees thousands of handles gets the old ones back. Process-
// wide because handles move between threads; it holds no state a caller can
// observe other than which stale pointers are still recognised.
class Quarantine {
 public:
  void push(HandleHeader* h, void (*destroy)(HandleHeader*)) {
    std::pair<HandleHeader*, void (*)(HandleHeader*)> old{nullptr, nullptr};
    {
      std::lock_guard<std::mutex> lock(mu_);
      q_.emplace_back(h, destroy);
      if (q_.size() > kMax) {
        old = q_.front();
        q_.pop_front();
      }
    }
    if (old.first) old.second(old.first);
  }
  ~Quarantine() {
    for (auto& [h, destroy] : q_) destroy(h);
  }

 private:
  static constexpr size_t kMax = 4096;
  std::mutex mu_;
  std::deque<std::pair<HandleHeader*, void (*)(HandleHeader*)>> q_;
};

Quarantine& quarantine_list() {
  static Quarantine q;
  return q;
}

}  // namespace

HandleHeader::HandleHeader(uint32_t m) : magic(m), generation(g_generation.fetch_add(1, std::memory_order_relaxed)) {}

void check_handle(const void* p, uint32_t magic, const char* what) {
  if (!p) fail(BRISK_ERR_INVALID_ARGUMENT, std::string(what) + " is NULL");
  const uint32_t m = static_cast<const HandleHeader*>(p)->magic;
  if (m == magic) return;
  const char* want = type_name_of(magic);
  if (m == kMagicDead)
    fail(BRISK_ERR_INVALID_ARGUMENT, std::string(what) + " was already freed (a " + want +
                                         (magic == kMagicSequence ? " is also freed with its engine)" : ")"));
  if (m == kMagicModelClosed) fail(BRISK_ERR_INVALID_ARGUMENT, std::string(what) + ": the model was closed");
  if (const char* other = type_name_of(m))
    fail(BRISK_ERR_INVALID_ARGUMENT, std::string(what) + ": a " + other + " was passed where a " + want + " is expected");
  fail(BRISK_ERR_INVALID_ARGUMENT,
       std::string(what) + " is not a " + want + " handle (a foreign pointer, or one freed long ago)");
}

void quarantine(HandleHeader* h, void (*destroy)(HandleHeader*)) noexcept {
  h->magic = kMagicDead;
  try {
    quarantine_list().push(h, destroy);
  } catch (...) {
    destroy(h);  // no memory for the list: free it now, as before quarantines
  }
}

void hold_model(const brisk_model* m) { m->refs.fetch_add(1, std::memory_order_relaxed); }

void release_model(const brisk_model* m) noexcept {
  if (m->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  brisk_model* mm = const_cast<brisk_model*>(m);
  mm->model.reset();
  retire(mm);
}

void destroy_session(brisk_session* s) noexcept {
  s->session.reset();
  release_model(s->owner);
  retire(s);
}

void destroy_engine(brisk_engine* e) noexcept {
  for (brisk_sequence* s : e->sequences) {
    s->seq = nullptr;
    retire(s);
  }
  e->sequences.clear();
  e->engine.reset();
  release_model(e->owner);
  retire(e);
}

}  // namespace brisk::capi
