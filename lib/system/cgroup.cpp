// SPDX-License-Identifier: MIT
#include "system/cgroup.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include "system/sysfs.h"

namespace brisk::sys {

namespace {

// "/a/b" -> {"/a/b", "/a", ""}: the cgroup and its ancestors below the mount.
std::vector<std::string> ancestry(std::string path) {
  std::vector<std::string> out;
  while (!path.empty() && path != "/") {
    out.push_back(path);
    const size_t slash = path.rfind('/');
    path = slash == std::string::npos ? "" : path.substr(0, slash);
  }
  out.push_back("");
  return out;
}

void take_min(uint64_t* have, uint64_t v) {
  if (v && (*have == 0 || v < *have)) *have = v;
}

void take_min(double* have, double v) {
  if (v > 0 && (*have == 0 || v < *have)) *have = v;
}

}  // namespace

CgroupLimits cgroup_limits(const std::string& root) {
  CgroupLimits lim;
  std::string v2_path, cpu_path, mem_path;
  bool v1 = false;
  if (std::optional<std::string> t = read_text(root, "/proc/self/cgroup")) {
    std::istringstream in(*t);
    std::string line;
    while (std::getline(in, line)) {
      const size_t a = line.find(':'), b = line.find(':', a + 1);
      if (a == std::string::npos || b == std::string::npos) continue;
      const std::string ctrls = "," + line.substr(a + 1, b - a - 1) + ",", path = line.substr(b + 1);
      if (ctrls == ",,") v2_path = path;
      if (ctrls.find(",cpu,") != std::string::npos) cpu_path = path, v1 = true;
      if (ctrls.find(",memory,") != std::string::npos) mem_path = path, v1 = true;
    }
  }
  // cgroup v2: cpu.max "QUOTA PERIOD" or "max PERIOD"; memory.max.
  for (const std::string& p : ancestry(v2_path)) {
    const std::string dir = "/sys/fs/cgroup" + p;
    if (std::optional<std::string> cpu = read_line(root, dir + "/cpu.max")) {
      lim.version = "v2";
      std::istringstream in(*cpu);
      std::string quota;
      double period = 0;
      if (in >> quota >> period && quota != "max" && period > 0) {
        try {
          take_min(&lim.cpu_quota, std::stod(quota) / period);
        } catch (...) {
        }
      }
    }
    if (std::optional<uint64_t> m = read_u64(root, dir + "/memory.max")) {
      lim.version = "v2";
      if (lim.memory_limit == 0 || *m < lim.memory_limit) {
        lim.memory_limit = *m;
        lim.memory_used = read_u64(root, dir + "/memory.current").value_or(0);
      }
    } else if (read_line(root, dir + "/memory.max")) {
      lim.version = "v2";  // "max": no limit at this level
    }
  }
  if (!lim.version.empty() || !v1) return lim;
  // cgroup v1: cfs_quota_us / cfs_period_us (-1: none); memory.limit_in_bytes
  // (a huge number when unlimited).
  for (const char* mount : {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"}) {
    for (const std::string& p : ancestry(cpu_path)) {
      const std::optional<std::string> q = read_line(root, mount + p + "/cpu.cfs_quota_us");
      const std::optional<uint64_t> period = read_u64(root, mount + p + "/cpu.cfs_period_us");
      if (!q || !period) continue;
      lim.version = "v1";
      try {
        const double quota = std::stod(*q);
        if (quota > 0 && *period > 0) take_min(&lim.cpu_quota, quota / static_cast<double>(*period));
      } catch (...) {
      }
    }
  }
  for (const std::string& p : ancestry(mem_path)) {
    const std::string dir = "/sys/fs/cgroup/memory" + p;
    if (std::optional<uint64_t> m = read_u64(root, dir + "/memory.limit_in_bytes")) {
      lim.version = "v1";
      if (*m < (uint64_t{1} << 60) && (lim.memory_limit == 0 || *m < lim.memory_limit)) {
        take_min(&lim.memory_limit, *m);
        lim.memory_used = read_u64(root, dir + "/memory.usage_in_bytes").value_or(0);
      }
    }
  }
  return lim;
}

int quota_limited_threads(int physical_cores, double cpu_quota) {
  const int cores = std::max(1, physical_cores);
  if (cpu_quota <= 0) return cores;
  return std::clamp(static_cast<int>(std::floor(cpu_quota + 1e-9)), 1, cores);
}

int default_thread_count(int physical_cores) {
  static const double quota = cgroup_limits().cpu_quota;
  return quota_limited_threads(physical_cores, quota);
}

}  // namespace brisk::sys
