// SPDX-License-Identifier: MIT
// The checks of `brisk doctor` that read files under the root prefix.
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "kernels/matmul.h"
#include "system/cgroup.h"
#include "system/doctor.h"
#include "system/sysfs.h"

namespace brisk::sys {

namespace {

std::string mib(uint64_t bytes) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.0f MiB", static_cast<double>(bytes) / 1048576.0);
  return buf;
}

// The kernels brisk picks for these flags (as kernels/dispatch does from CPUID).
std::string isa_for_flags(const CpuInfo& c) {
  if (c.has("avx512f") && c.has("avx512bw") && c.has("avx512vl") && c.has("avx512dq") && c.has("avx512_vnni"))
    return "avx512";
  if (c.has("avx2") && c.has("fma") && c.has("f16c")) return "avx2";
  return "scalar";
}

// Asks the kernel for permission to use AMX tile data (Linux 5.16+).
bool amx_granted() {
#ifdef SYS_arch_prctl
  constexpr int kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return ::syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

}  // namespace

bool CpuInfo::has(const std::string& f) const { return std::find(flags.begin(), flags.end(), f) != flags.end(); }

CpuInfo read_cpuinfo(const std::string& root) {
  CpuInfo c;
  std::optional<std::string> t = read_text(root, "/proc/cpuinfo");
  if (!t) return c;
  std::istringstream in(*t);
  std::string line;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "model name" && c.model.empty()) c.model = value;
    if (key == "flags" && c.flags.empty()) {
      std::istringstream fs(value);
      std::string f;
      while (fs >> f) c.flags.push_back(f);
    }
  }
  return c;
}

void count_cores(const std::string& root, int* cores, int* cpus) {
  std::set<std::pair<uint64_t, uint64_t>> phys;
  int logical = 0;
  for (const std::string& name : list_dir(root, "/sys/devices/system/cpu")) {
    if (name.size() < 4 || name.compare(0, 3, "cpu") != 0 || name.find_first_not_of("0123456789", 3) != std::string::npos)
      continue;
    const std::string dir = "/sys/devices/system/cpu/" + name;
    if (read_u64(root, dir + "/online").value_or(1) == 0) continue;
    const std::optional<uint64_t> core = read_u64(root, dir + "/topology/core_id");
    if (!core) continue;
    ++logical;
    phys.insert({read_u64(root, dir + "/topology/physical_package_id").value_or(0), *core});
  }
  if (logical == 0) {  // no sysfs topology: count processors in cpuinfo
    std::optional<std::string> t = read_text(root, "/proc/cpuinfo");
    std::istringstream in(t.value_or(""));
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("processor", 0) == 0) ++logical;
    *cpus = std::max(1, logical);
    *cores = *cpus;
    return;
  }
  *cpus = logical;
  *cores = static_cast<int>(phys.size());
}

void check_cpu(const DoctorOptions& o, const CpuInfo& cpu, std::vector<Finding>* out) {
  std::string isa = isa_for_flags(cpu);
  if (o.root.empty()) isa = kernels::isa_name(kernels::active_isa());  // what the kernels really chose (BRISK_ISA may force one)
  std::string seen;
  for (const char* f : {"avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_tile", "amx_int8", "amx_bf16"})
    if (cpu.has(f)) seen += (seen.empty() ? "" : " ") + std::string(f);
  Finding f{"cpu", "ok", (cpu.model.empty() ? std::string("unknown CPU") : cpu.model) + "; brisk kernels: " + isa +
                             " (flags: " + (seen.empty() ? "none of avx2/avx512/vnni/amx" : seen) + ")", ""};
  if (isa == "scalar") {
    f.status = "warn";
    f.advice = "no AVX2/FMA/F16C: brisk runs its portable kernels, several times slower; use a CPU with AVX2";
  } else if (isa == "avx2" && cpu.has("avx512f")) {
    f.status = "info";
    f.advice = "AVX-512 is present but without all of BW/VL/DQ/VNNI (or forced off by BRISK_ISA), so the AVX2 kernels run";
  }
  out->push_back(f);
  if (cpu.has("amx_tile")) {
    Finding a{"amx", "info", "AMX tiles present", ""};
    if (!o.measure) {
      a.value += "; OS permission not checked (files only)";
    } else if (amx_granted()) {
      a.value += "; the OS grants their use (arch_prctl ARCH_REQ_XCOMP_PERM)";
    } else {
      a.status = "warn";
      a.value += "; the OS refuses them (arch_prctl ARCH_REQ_XCOMP_PERM failed)";
      a.advice = "a Linux kernel 5.16 or newer is needed to use AMX";
    }
    out->push_back(a);
  }
}

void check_cores(const DoctorOptions&, int cores, int cpus, double quota, int threads, std::vector<Finding>* out) {
  Finding f{"cores", "ok",
            std::to_string(cores) + " physical cores, " + std::to_string(cpus) + " logical CPUs" +
                (cpus > cores ? " (SMT on: siblings share a core's units; brisk uses one thread per core)" : "") +
                "; brisk will use -t " + std::to_string(threads),
            ""};
  if (quota > 0 && threads < cores) {
    f.status = "warn";
    char q[32];
    std::snprintf(q, sizeof q, "%.2f", quota);
    f.value += " (limited by the cgroup CPU quota of " + std::string(q) + " CPUs)";
    f.advice = "raise the container's CPU limit (cpu.max / --cpus) to give brisk every core";
  }
  out->push_back(f);
}

void check_frequency(const DoctorOptions& o, std::vector<Finding>* out) {
  std::map<std::string, int> governors;
  for (const std::string& name : list_dir(o.root, "/sys/devices/system/cpu")) {
    if (name.compare(0, 3, "cpu") != 0 || name.size() < 4 || !isdigit(static_cast<unsigned char>(name[3]))) continue;
    if (std::optional<std::string> g = read_line(o.root, "/sys/devices/system/cpu/" + name + "/cpufreq/scaling_governor"))
      ++governors[*g];
  }
  Finding g{"governor", "ok", "", ""};
  if (governors.empty()) {
    g.status = "info";
    g.value = "no cpufreq interface (a virtual machine, or the host sets the frequency)";
  } else {
    for (const auto& [name, n] : governors) g.value += (g.value.empty() ? "" : ", ") + name + " on " + std::to_string(n) + " CPUs";
    if (governors.count("powersave")) {
      g.status = "warn";
      g.advice = "the powersave governor keeps clocks low: 'sudo cpupower frequency-set -g performance'";
    }
  }
  out->push_back(g);
  Finding t{"turbo", "ok", "", ""};
  if (std::optional<uint64_t> nt = read_u64(o.root, "/sys/devices/system/cpu/intel_pstate/no_turbo")) {
    t.value = *nt ? "turbo disabled (intel_pstate no_turbo=1)" : "turbo enabled";
    if (*nt) t.status = "warn", t.advice = "enable turbo: 'echo 0 | sudo tee /sys/devices/system/cpu/intel_pstate/no_turbo'";
  } else if (std::optional<uint64_t> b = read_u64(o.root, "/sys/devices/system/cpu/cpufreq/boost")) {
    t.value = *b ? "boost enabled" : "boost disabled (cpufreq/boost=0)";
    if (!*b) t.status = "warn", t.advice = "enable boost: 'echo 1 | sudo tee /sys/devices/system/cpu/cpufreq/boost'";
  } else {
    t.status = "info";
    t.value = "turbo state not visible";
  }
  out->push_back(t);
}

void check_memory(const DoctorOptions& o, uint64_t plan, std::vector<Finding>* out) {
  const std::map<std::string, uint64_t> mi = meminfo(o.root);
  auto get = [&](const char* k) {
    auto it = mi.find(k);
    return it == mi.end() ? uint64_t{0} : it->second;
  };
  const uint64_t avail = get("MemAvailable");
  const CgroupLimits cg = cgroup_limits(o.root);
  Finding m{"memory", "ok", mib(avail) + " available of " + mib(get("MemTotal")), ""};
  if (mi.empty()) m = {"memory", "warn", "cannot read /proc/meminfo", "check that /proc is mounted"};
  if (plan) {
    m.value += "; the model's plan (one sequence) needs " + mib(plan);
    if (plan > avail) {
      m.status = "fail";
      m.advice = "the model does not fit in available memory: close programs, use a smaller quantization or context";
    } else if (plan > avail / 10 * 8) {
      m.status = "warn";
      m.advice = "the model takes most of the available memory; parallel sequences and other programs will compete";
    }
  }
  out->push_back(m);
  Finding c{"cgroup", "ok", cg.version.empty() ? "no cgroup limits found" : "cgroup " + cg.version, ""};
  if (cg.cpu_quota > 0) {
    char q[48];
    std::snprintf(q, sizeof q, "; CPU quota %.2f CPUs", cg.cpu_quota);
    c.value += q;
  }
  if (cg.memory_limit) {
    const uint64_t left = cg.memory_limit > cg.memory_used ? cg.memory_limit - cg.memory_used : 0;
    c.value += "; memory limit " + mib(cg.memory_limit) + " (" + mib(left) + " left)";
    if (plan && plan > left) {
      c.status = "fail";
      c.advice = "the model's plan does not fit the cgroup's memory limit: raise it (memory.max / --memory)";
    } else if (plan && plan > left / 10 * 8) {
      c.status = "warn";
      c.advice = "the model takes most of the cgroup's memory limit; the OOM killer is near";
    }
  }
  out->push_back(c);
  const uint64_t swap_total = get("SwapTotal"), swap_used = swap_total - std::min(swap_total, get("SwapFree"));
  Finding s{"swap", "ok", swap_total ? mib(swap_used) + " of " + mib(swap_total) + " swap in use" : "no swap", ""};
  if (swap_used > 0) {
    s.status = "warn";
    s.advice = "pages are swapped out; if the model's pages go there, decoding stalls: free memory, or load with --mlock";
  }
  out->push_back(s);
  Finding t{"thp", "ok", "", ""};
  if (std::optional<std::string> e = read_line(o.root, "/sys/kernel/mm/transparent_hugepage/enabled")) {
    const size_t a = e->find('['), b = e->find(']');
    const std::string mode = a != std::string::npos && b > a ? e->substr(a + 1, b - a - 1) : *e;
    t.value = "transparent huge pages: " + mode;
    if (mode == "never") {
      t.status = "warn";
      t.advice = "brisk asks for huge pages for its KV cache (madvise): 'echo madvise | sudo tee "
                 "/sys/kernel/mm/transparent_hugepage/enabled'";
    }
  } else {
    t.status = "info";
    t.value = "transparent huge pages not available";
  }
  out->push_back(t);
}

void check_disk(const DoctorOptions& o, std::vector<Finding>* out) {
  if (o.model_path.empty()) return;
  std::string path = o.model_path;
  if (o.root.empty()) {
    char buf[4096];
    if (::realpath(o.model_path.c_str(), buf)) path = buf;
  }
  // The mount holding the model: the longest mount point that prefixes its path.
  std::string best_mp, fstype, device, source;
  std::istringstream in(read_text(o.root, "/proc/self/mountinfo").value_or(""));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string id, parent, majmin, mroot, mp, word;
    if (!(ls >> id >> parent >> majmin >> mroot >> mp)) continue;
    while (ls >> word && word != "-") {
    }
    std::string fs, src;
    ls >> fs >> src;
    const bool covers = mp == "/" || path == mp || path.compare(0, mp.size() + 1, mp + "/") == 0;
    if (covers && mp.size() >= best_mp.size()) best_mp = mp, fstype = fs, device = majmin, source = src;
  }
  Finding f{"disk", "ok", "", ""};
  if (fstype.empty()) {
    f.status = "info";
    f.value = "cannot tell which filesystem holds '" + o.model_path + "'";
    out->push_back(f);
    return;
  }
  f.value = "'" + o.model_path + "' is on " + fstype + " (" + source + ", mounted at " + best_mp + ")";
  static const char* const kNetwork[] = {"nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "ceph", "glusterfs", "fuse.sshfs",
                                   "fuse.s3fs", "fuse.gcsfuse", "afs", "lustre", "virtiofs", "fuse.rclone"};
  for (const char* n : kNetwork) {
    if (fstype == n) {
      f.status = "warn";
      f.value += ", a network filesystem";
      f.advice = "pages of a mapped model on a network filesystem are fetched on demand and may be dropped: load "
                 "with --no-mmap (read once into memory) or copy the model to a local disk";
    }
  }
  const std::string dev = "/sys/dev/block/" + device;
  std::optional<uint64_t> rot = read_u64(o.root, dev + "/queue/rotational");
  if (!rot) rot = read_u64(o.root, dev + "/../queue/rotational");  // a partition: its disk's queue
  if (rot && *rot) {
    f.status = "warn";
    f.value += ", a rotational disk";
    f.advice = "a spinning disk loads the model slowly and stalls on page faults: copy it to an SSD, or load with "
               "--mlock/--no-mmap so it is read once";
  } else if (rot) {
    f.value += ", not rotational";
  }
  out->push_back(f);
}

}  // namespace brisk::sys
