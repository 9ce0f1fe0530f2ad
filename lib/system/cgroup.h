// SPDX-License-Identifier: MIT
// The cgroup limits this process runs under (v2 or v1), so thread and memory
// defaults follow a container's allowance rather than the host's size.
#pragma once
#include <cstdint>
#include <string>

namespace brisk::sys {

struct CgroupLimits {
  std::string version;     // "v2", "v1" or "" (none found)
  double cpu_quota = 0;    // CPUs' worth of time per period; 0: no quota
  uint64_t memory_limit = 0;  // bytes; 0: no limit
  uint64_t memory_used = 0;   // bytes charged to the cgroup now
};

// Reads root/proc/self/cgroup and the matching files under root/sys/fs/cgroup;
// a limit set on an ancestor cgroup counts too (the smallest wins).
CgroupLimits cgroup_limits(const std::string& root = "");

// The worker threads to use by default: one per physical core, but no more
// than the whole CPUs the quota grants (at least one). Threads that wait for
// each other every layer lose more to CFS throttling than a core left idle.
int quota_limited_threads(int physical_cores, double cpu_quota);

// quota_limited_threads() for this process, the quota read once.
int default_thread_count(int physical_cores);

}  // namespace brisk::sys
