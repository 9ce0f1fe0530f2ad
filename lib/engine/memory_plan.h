// SPDX-License-Identifier: MIT
// How much memory a configuration needs and how much the machine can give,
// computed before anything is allocated, so that "too many sequences" or "too
// long a context" is one clear error with the numbers instead of swapping or
// the OOM killer. Every path that allocates a KV cache or logits plans here:
// engines, sessions (one-slot engines) and the evaluators of ppl, compare,
// calibrate and quantize.
#pragma once
#include <cstdint>
#include <string>

#include "core/tensor_type.h"
#include "model/model.h"

namespace brisk {

// What this process may still allocate, and where that figure came from.
struct MemoryLimit {
  uint64_t available = 0;
  std::string source;  // e.g. "MemAvailable", "cgroup v2 limit of /sys/fs/cgroup/job"
};

// The smallest of MemAvailable (/proc/meminfo) and what the process's memory
// cgroup (v2 memory.max, or v1 memory.limit_in_bytes, at every level up to
// the root) has left. A missing or zero reading falls back to MemTotal and
// then to the physical memory size: never to "unlimited". `root` prefixes
// every path read ("" for the real /proc and /sys; tests pass a fake tree).
MemoryLimit read_memory_limit(const std::string& root = "");

// One configuration's buffers.
struct MemoryRequest {
  int n_ctx = 0;              // tokens per sequence
  int n_seq = 1;              // KV slots
  int max_tokens = 512;       // rows of the forward pass's batch buffers
  int n_threads = 0;          // 0: one per physical core (resolved here)
  TensorType k_type = TensorType::F16, v_type = TensorType::F16;
  uint64_t extra_logits_rows = 0;  // rows of n_vocab floats kept outside the forward pass
  uint64_t reserved = 0;      // already promised to other engines of the same job
  uint64_t budget = 0;        // 0: read_memory_limit(); otherwise the available bytes
  std::string root;           // for read_memory_limit
};

struct MemoryPlan {
  uint64_t weights = 0;   // model bytes that must be resident (mapped pages)
  uint64_t kv = 0;        // all slots' caches
  uint64_t logits = 0;    // the forward pass's logits rows plus every kept row
  uint64_t scratch = 0;   // activations and per-thread attention buffers
  uint64_t reserved = 0;  // other engines of the same job
  uint64_t available = 0;
  std::string source;     // where `available` came from
  int n_threads = 0;      // the resolved thread count planned for
  uint64_t total() const { return weights + kv + logits + scratch + reserved; }
};

MemoryPlan plan_memory(const Model& model, const MemoryRequest& request);

// Throws BRISK_ERR_OUT_OF_MEMORY, naming needed against available and what
// would fit (fewer sequences, a shorter context, a Q8_0 cache), if the plan
// does not fit in the available memory less a small headroom.
// `what` names the configuration ("4 sequences x 2048 tokens").
void require_fits(const MemoryPlan& plan, const MemoryRequest& request, const std::string& what);

// "123 MiB" / "1.5 GiB".
std::string format_bytes(uint64_t bytes);

}  // namespace brisk
