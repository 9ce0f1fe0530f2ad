// SPDX-License-Identifier: MIT
#include "engine/memory_plan.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/error.h"
#include "kv/kv_cache.h"
#include "model/forward.h"
#include "threads/thread_pool.h"

namespace brisk {

namespace {

constexpr uint64_t kUnlimited = UINT64_MAX;

// A cgroup file holding one number or "max"; false if absent or unreadable.
bool read_value(const std::string& path, uint64_t* out) {
  std::ifstream in(path);
  std::string s;
  if (!(in >> s)) return false;
  if (s == "max") {
    *out = kUnlimited;
    return true;
  }
  try {
    size_t used = 0;
    *out = std::stoull(s, &used);
    return used == s.size();
  } catch (...) {
    return false;
  }
}

// One "key value" line of memory.stat or meminfo-like files.
bool read_key(const std::string& path, const std::string& key, uint64_t* out) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string k;
    uint64_t v;
    if (ls >> k >> v && (k == key || k == key + ":")) {
      *out = v;
      return true;
    }
  }
  return false;
}

// The cgroup's remaining allowance: limit - (usage - inactive file pages,
// which the kernel reclaims before it would fail an allocation).
struct CgroupFiles {
  const char* limit;
  const char* usage;
  const char* inactive_file;
  uint64_t unlimited_above;  // v1 reports "no limit" as a huge page-rounded number
};

bool cgroup_left(const std::string& dir, const CgroupFiles& f, uint64_t* left) {
  uint64_t limit = 0, usage = 0, inactive = 0;
  if (!read_value(dir + "/" + f.limit, &limit) || limit == 0 || limit >= f.unlimited_above) return false;
  if (!read_value(dir + "/" + f.usage, &usage)) usage = 0;
  if (read_key(dir + "/memory.stat", f.inactive_file, &inactive) && inactive <= usage) usage -= inactive;
  *left = limit > usage ? limit - usage : 0;
  return true;
}

// The tightest allowance from the process's cgroup up to the hierarchy's root.
void walk_cgroup(const std::string& mount, std::string path, const CgroupFiles& f, const char* name,
                 MemoryLimit* best) {
  std::ifstream probe(mount + path + "/" + f.limit);
  if (!probe) path = "";  // a cgroup namespace mounts the process's own cgroup at the root
  for (;;) {
    uint64_t left;
    const std::string dir = mount + path;
    if (cgroup_left(dir, f, &left) && left < best->available) {
      best->available = left;
      best->source = std::string(name) + " limit of " + (path.empty() ? "/" : path);
    }
    if (path.empty() || path == "/") break;
    const size_t slash = path.rfind('/');
    path = slash == std::string::npos || slash == 0 ? "" : path.substr(0, slash);
  }
}

}  // namespace

MemoryLimit read_memory_limit(const std::string& root) {
  MemoryLimit m;
  m.available = kUnlimited;
  uint64_t kb = 0;
  const std::string meminfo = root + "/proc/meminfo";
  if (read_key(meminfo, "MemAvailable", &kb) && kb > 0) {
    m.available = kb * 1024;
    m.source = "MemAvailable";
  } else if (read_key(meminfo, "MemTotal", &kb) && kb > 0) {
    // No usable MemAvailable (an old kernel or a broken reading): the total
    // is an upper bound, never "unlimited".
    m.available = kb * 1024;
    m.source = "MemTotal (MemAvailable unreadable)";
  } else {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) {
      m.available = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
      m.source = "physical memory (/proc/meminfo unreadable)";
    }
  }
  // /proc/self/cgroup: "0::/path" (v2) or "N:ctrl,memory,...:/path" (v1).
  std::ifstream in(root + "/proc/self/cgroup");
  std::string line;
  static const CgroupFiles v2{"memory.max", "memory.current", "inactive_file", kUnlimited};
  static const CgroupFiles v1{"memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file", 1ull << 60};
  bool any = false;
  while (std::getline(in, line)) {
    const size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string ctrl = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (line.compare(0, a, "0") == 0 && ctrl.empty()) {
      walk_cgroup(root + "/sys/fs/cgroup", path, v2, "cgroup v2", &m);
      any = true;
    } else if (("," + ctrl + ",").find(",memory,") != std::string::npos) {
      walk_cgroup(root + "/sys/fs/cgroup/memory", path, v1, "cgroup v1", &m);
      any = true;
    }
  }
  if (!any) {
    // No /proc/self/cgroup: a mounted hierarchy may still limit us.
    walk_cgroup(root + "/sys/fs/cgroup", "", v2, "cgroup v2", &m);
    walk_cgroup(root + "/sys/fs/cgroup/memory", "", v1, "cgroup v1", &m);
  }
  if (m.available == kUnlimited) {
    // Nothing readable at all: plan as if nothing were free rather than
    // approving everything; the message says why.
    m.available = 0;
    m.source = "no memory reading (/proc and sysconf unreadable)";
  }
  return m;
}

std::string format_bytes(uint64_t bytes) {
  char buf[48];
  const double mib = static_cast<double>(bytes) / (1024.0 * 1024.0);
  if (mib >= 10240)
    std::snprintf(buf, sizeof buf, "%.1f GiB", mib / 1024.0);
  else
    std::snprintf(buf, sizeof buf, "%.0f MiB", mib);
  return buf;
}

MemoryPlan plan_memory(const Model& model, const MemoryRequest& r) {
  const ModelConfig& c = model.config();
  MemoryPlan p;
  const uint64_t file = model.file().file_size(), packed = model.weights().packed_bytes;
  p.weights = file > packed ? file - packed : 0;
  const uint64_t n_vocab = static_cast<uint64_t>(c.n_vocab);
  p.kv = static_cast<uint64_t>(r.n_seq) * static_cast<uint64_t>(r.n_ctx) *
         KVCache::bytes_per_token(c, r.k_type, r.v_type);
  p.n_threads = r.n_threads > 0 ? r.n_threads : physical_core_count();
  // Forward logits rows, each sequence's last logits, and rows kept for callers.
  p.logits = 4ull * n_vocab * (static_cast<uint64_t>(r.max_tokens) + static_cast<uint64_t>(r.n_seq) +
                               r.extra_logits_rows);
  p.scratch = Forward::scratch_bytes(c, r.max_tokens, r.n_ctx, p.n_threads);
  p.reserved = r.reserved;
  if (r.budget) {
    p.available = r.budget;
    p.source = "the given memory budget";
  } else {
    MemoryLimit m = read_memory_limit(r.root);
    p.available = m.available;
    p.source = m.source;
  }
  return p;
}

void require_fits(const MemoryPlan& p, const MemoryRequest& r, const std::string& what) {
  // Keep a little headroom for the process itself and the page cache.
  const uint64_t usable = p.available - p.available / 20;
  if (p.total() <= usable) return;
  std::string msg = "not enough memory for " + what + ": needs " + format_bytes(p.total()) + " (weights " +
                    format_bytes(p.weights) + " + KV cache " + format_bytes(p.kv) + " + logits " +
                    format_bytes(p.logits) + " + scratch for " + std::to_string(p.n_threads) + " threads " +
                    format_bytes(p.scratch);
  if (p.reserved) msg += " + other engines " + format_bytes(p.reserved);
  msg += "), " + format_bytes(p.available) + " available (" + p.source + ").";
  // What would fit. Per sequence: its KV slot, its logits and (at most) one
  // batch row of logits; per position: the KV cache of every sequence.
  const uint64_t n_seq = static_cast<uint64_t>(std::max(r.n_seq, 1)), n_ctx = static_cast<uint64_t>(std::max(r.n_ctx, 1));
  const uint64_t row = p.logits / std::max<uint64_t>(static_cast<uint64_t>(r.max_tokens) + n_seq + r.extra_logits_rows, 1);
  const uint64_t per_seq = p.kv / n_seq + 2 * row;
  const uint64_t fixed = p.total() > per_seq * n_seq ? p.total() - per_seq * n_seq : 0;
  const uint64_t room = usable > fixed ? usable - fixed : 0;
  std::vector<std::string> tips;
  if (n_seq > 1 && room / per_seq >= 1)
    tips.push_back("at most " + std::to_string(room / per_seq) + " sequences fit at this context");
  // Per position: every sequence's KV row, and for all-position evaluation
  // (a chunk in one batch) a kept row and a batch row of logits.
  const bool all_pos = r.extra_logits_rows >= n_ctx;
  const uint64_t per_pos = p.kv / n_ctx + (all_pos ? 2 * row : 0);
  const uint64_t ctx_fixed = p.total() > per_pos * n_ctx ? p.total() - per_pos * n_ctx : 0;
  const uint64_t ctx_room = usable > ctx_fixed ? usable - ctx_fixed : 0;
  if (per_pos && ctx_room / per_pos >= 1 && ctx_room / per_pos < n_ctx)
    tips.push_back("a context of at most " + std::to_string(ctx_room / per_pos) + " tokens fits" +
                   (n_seq > 1 ? " with " + std::to_string(n_seq) + " sequences" : std::string()));
  if (r.k_type != TensorType::Q8_0 && r.k_type != TensorType::Q4_0 && p.kv > p.total() / 4)
    tips.push_back("a Q8_0 KV cache needs about half the KV memory of F16");
  if (all_pos && p.logits > p.total() / 4)
    tips.push_back("the logits of every position take " + format_bytes(p.logits) + ": use a shorter context");
  if (tips.empty()) tips.push_back("use a smaller model, fewer sequences or a shorter context");
  msg += " Suggestions: ";
  for (size_t i = 0; i < tips.size(); ++i) msg += (i ? "; " : "") + tips[i];
  fail(BRISK_ERR_OUT_OF_MEMORY, msg + ".");
}

}  // namespace brisk
