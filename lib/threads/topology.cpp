// SPDX-License-Identifier: MIT
#include "threads/topology.h"

#include <hwloc.h>
#include <sched.h>

#include <algorithm>
#include <thread>

namespace brisk {

namespace {

// One "core" per CPU of the affinity mask (or per hardware thread).
CpuTopology fallback(const cpu_set_t* mask, std::string why) {
  CpuTopology t;
  t.source = "fallback (" + why + ")";
  if (mask) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, mask)) t.cores.push_back({cpu, {cpu}});
  }
  if (t.cores.empty()) {
    const int n = std::max(1u, std::thread::hardware_concurrency());
    for (int cpu = 0; cpu < n; ++cpu) t.cores.push_back({cpu, {cpu}});
  }
  t.n_cpus = static_cast<int>(t.cores.size());
  return t;
}

CpuTopology load() {
  cpu_set_t mask_storage;
  CPU_ZERO(&mask_storage);
  const cpu_set_t* mask =
      sched_getaffinity(0, sizeof(mask_storage), &mask_storage) == 0 ? &mask_storage : nullptr;

  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) return fallback(mask, "hwloc_topology_init failed");
  if (hwloc_topology_load(topo) != 0) {
    hwloc_topology_destroy(topo);
    return fallback(mask, "hwloc_topology_load failed");
  }

  // hwloc 2 already leaves out what the cgroup cpuset forbids; the affinity
  // mask adds taskset-style restrictions.
  hwloc_bitmap_t allowed = hwloc_bitmap_dup(hwloc_topology_get_allowed_cpuset(topo));
  if (allowed && mask) {
    hwloc_bitmap_t m = hwloc_bitmap_alloc();
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, mask)) hwloc_bitmap_set(m, static_cast<unsigned>(cpu));
    hwloc_bitmap_and(allowed, allowed, m);
    hwloc_bitmap_free(m);
  }
  if (!allowed || hwloc_bitmap_iszero(allowed)) {
    hwloc_bitmap_free(allowed);
    hwloc_topology_destroy(topo);
    return fallback(mask, "hwloc found no allowed CPU");
  }

  CpuTopology t;
  t.source = "hwloc";
  t.n_cpus = hwloc_bitmap_weight(allowed);
  const int n_cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  for (int i = 0; i < n_cores; ++i) {
    hwloc_obj_t core = hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, static_cast<unsigned>(i));
    if (!core || !core->cpuset) continue;
    CpuCore c;
    c.index = static_cast<int>(core->logical_index);
    for (int cpu = hwloc_bitmap_first(core->cpuset); cpu != -1;
         cpu = hwloc_bitmap_next(core->cpuset, cpu))
      if (hwloc_bitmap_isset(allowed, static_cast<unsigned>(cpu))) c.cpus.push_back(cpu);
    if (!c.cpus.empty()) t.cores.push_back(std::move(c));
  }
  int nodes = 0;
  const int n_nodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < n_nodes; ++i) {
    hwloc_obj_t node = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
    if (node && node->cpuset && hwloc_bitmap_intersects(node->cpuset, allowed)) ++nodes;
  }
  t.numa_nodes = std::max(1, nodes);
  // The L2 above the first allowed CPU (the level that holds a core's
  // private working set on current x86 parts).
  if (hwloc_obj_t pu = hwloc_get_pu_obj_by_os_index(topo, static_cast<unsigned>(hwloc_bitmap_first(allowed)))) {
    for (hwloc_obj_t o = pu->parent; o; o = o->parent)
      if (o->type == HWLOC_OBJ_L2CACHE && o->attr) {
        t.l2_bytes = static_cast<size_t>(o->attr->cache.size);
        break;
      }
  }
  if (t.cores.empty()) {  // no core objects: count each allowed CPU as a core
    t.source = "hwloc (no core objects)";
    for (int cpu = hwloc_bitmap_first(allowed); cpu != -1; cpu = hwloc_bitmap_next(allowed, cpu))
      t.cores.push_back({cpu, {cpu}});
  }
  hwloc_bitmap_free(allowed);
  hwloc_topology_destroy(topo);
  return t;
}

}  // namespace

const CpuTopology& cpu_topology() {
  static const CpuTopology topology = load();
  return topology;
}

bool interleave_across_numa_nodes(void* p, size_t n) {
  if (!p || n == 0 || cpu_topology().numa_nodes < 2) return false;
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) return false;
  bool ok = false;
  if (hwloc_topology_load(topo) == 0) {
    ok = hwloc_set_area_membind(topo, p, n, hwloc_topology_get_allowed_nodeset(topo), HWLOC_MEMBIND_INTERLEAVE,
                                HWLOC_MEMBIND_BYNODESET) == 0;
  }
  hwloc_topology_destroy(topo);
  return ok;
}

}  // namespace brisk
