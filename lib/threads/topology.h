// SPDX-License-Identifier: MIT
// The CPUs this process may run on, grouped by physical core (SMT siblings
// together), read once with hwloc. The thread pool sizes and pins from it.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace brisk {

struct CpuCore {
  int index = 0;          // hwloc logical index of the core (as lstopo shows it)
  std::vector<int> cpus;  // its allowed logical CPUs (OS numbering), ascending
};

struct CpuTopology {
  std::vector<CpuCore> cores;  // allowed physical cores, in hwloc logical order
  int n_cpus = 0;              // allowed logical CPUs
  int numa_nodes = 1;          // NUMA nodes holding allowed CPUs
  size_t l2_bytes = 0;         // the L2 cache of the first allowed core; 0: unknown
  std::string source;          // "hwloc", or why the fallback was used
};

// Computed on first use from hwloc's allowed cpuset intersected with the
// affinity mask of the thread making that first call, then cached for the
// process. Caching matters: a ThreadPool pins its calling thread to one core,
// and a later sched_getaffinity on that thread would see a single core.
// If hwloc fails, every CPU of the affinity mask counts as a core (or
// hardware_concurrency() CPUs when even the mask cannot be read).
const CpuTopology& cpu_topology();

// On a machine with several NUMA nodes, asks that the not-yet-touched pages
// of [p, p + n) be spread round-robin over the nodes (hwloc interleave
// binding), so that memory every core reads, whichever tasks it takes
// (weights, KV cache), is not all behind one node's controller. Call before
// the first write. Returns false (and does nothing) on one node or when the
// OS refuses; purely a placement hint.
bool interleave_across_numa_nodes(void* p, size_t n);

}  // namespace brisk
