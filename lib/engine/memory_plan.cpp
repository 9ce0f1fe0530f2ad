// How much memory a configuration needs, checked before anything is allocated,
// so that "too many sequences" is a clear message instead of swapping or the
// OOM killer.
#include <cstdio>
#include <fstream>
#include <string>

#include "engine/engine.h"

namespace brisk {

namespace {

uint64_t read_number(const char* path) {
  std::ifstream in(path);
  std::string s;
  if (!(in >> s) || s == "max") return 0;
  try {
    return std::stoull(s);
  } catch (...) {
    return 0;
  }
}

// MemAvailable, lowered to the cgroup's remaining allowance when one is set.
uint64_t available_memory() {
  uint64_t avail = 0;
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kb;
  std::string unit;
  while (in >> key >> kb) {
    std::getline(in, unit);
    if (key == "MemAvailable:") avail = kb * 1024;
  }
  uint64_t limit = read_number("/sys/fs/cgroup/memory.max");
  if (limit) {
    uint64_t used = read_number("/sys/fs/cgroup/memory.current");
    uint64_t left = limit > used ? limit - used : 0;
    if (!avail || left < avail) avail = left;
  }
  return avail;
}

}  // namespace

MemoryPlan plan_memory(const Model& model, const EngineOptions& o, int n_ctx) {
  const ModelConfig& c = model.config();
  MemoryPlan p;
  p.weights = model.file().file_size();
  const TensorType kt = o.k_type.value_or(default_cache_type(model));
  const TensorType vt = o.v_type.value_or(default_cache_type(model));
  p.kv = static_cast<uint64_t>(o.n_seq_max) * static_cast<uint64_t>(n_ctx) * KVCache::bytes_per_token(c, kt, vt);
  // Forward-pass scratch (see Forward's constructor) plus converted activations.
  const uint64_t T = static_cast<uint64_t>(o.n_batch);
  const uint64_t per_token = 4ull * (3ull * c.n_embd + 2ull * c.q_dim() + 2ull * c.kv_dim() + 2ull * c.n_ff +
                                     c.rope_dim + c.n_vocab) +
                             2ull * c.n_ff;
  const uint64_t threads = o.n_threads > 0 ? o.n_threads : 64;
  p.scratch = T * per_token + threads * n_ctx * 4ull + static_cast<uint64_t>(o.n_seq_max) * c.n_vocab * 4ull;
  p.available = o.memory_budget ? o.memory_budget : available_memory();
  return p;
}

}  // namespace brisk
