// SPDX-License-Identifier: MIT
#include "system/doctor.h"

#include <cstdio>

#include "core/error.h"
#include "engine/engine.h"
#include "model/kernel_plan.h"
#include "model/plan_cache.h"
#include "system/cgroup.h"
#include "threads/thread_pool.h"

namespace brisk::sys {

namespace {

// The kernel plan a load of the model with `threads` threads would use:
// none cached yet, one ignored (and why), or the cached one's decode
// kernels and any variant still waiting for its second measuring.
void check_kernel_plan(const Model& m, int threads, std::vector<Finding>* out) {
  const std::string dir = plan_cache_dir("");
  if (dir.empty()) {
    out->push_back({"plan", "info", "no cache directory for kernel plans: every load measures one (about 2 s)",
                    "set BRISK_CACHE_DIR or HOME"});
    return;
  }
  const PlanKey key = make_plan_key(m.weights(), threads);
  const std::string path = plan_cache_path(dir, key);
  const std::string tune = "'brisk tune -m MODEL -t " + std::to_string(threads) + "' measures one now";
  KernelPlan plan;
  std::string why;
  if (!read_cached_plan(path, key, &plan, &why)) {
    if (why.empty())
      out->push_back({"plan", "info",
                      "no kernel plan cached for this model with -t " + std::to_string(threads) + " in " + dir +
                          ": the first load measures one (about 2 s)",
                      tune});
    else
      out->push_back({"plan", "warn", "the cached kernel plan " + path + " is ignored (" + why + ")",
                      "the next load measures again; " + tune});
    return;
  }
  std::string value = "measured " + plan_time_text(plan.measured_at) + " (" + path + "); decode:";
  std::string pending;
  char buf[160];
  for (const TypePlan& tp : plan.types) {
    std::snprintf(buf, sizeof buf, "%s %s %s (%.1f GB/s)", &tp == &plan.types[0] ? "" : ",", type_name(tp.type),
                  tp.kernel[0].name, tp.gbps[0]);
    value += buf;
    for (int c = 0; c < kernels::kColClasses; ++c) {
      if (!tp.pending[c].name) continue;
      std::snprintf(buf, sizeof buf, "%s%s %s: %s%s", pending.empty() ? "" : "; ", type_name(tp.type),
                    kernels::col_class_name(static_cast<kernels::ColClass>(c)), tp.pending[c].name,
                    tp.pending[c].kernel == tp.kernel[c].kernel ? " (runs already: far ahead of the default)" : "");
      pending += buf;
    }
  }
  if (pending.empty()) {
    out->push_back({"plan", "ok", value, ""});
  } else {
    out->push_back({"plan", "info", value,
                    "pending (faster once, the default runs, unless far behind, until a load at least " +
                        std::to_string(static_cast<int>(default_confirm_after_seconds())) +
                        " s after measures it faster again): " + pending});
  }
}

// What the model needs with one sequence at its default context; 0 when
// there is no model. A model that cannot be opened is a finding itself.
// The engine's plan leaves out the packed weights (in a loaded engine they
// are already allocated, and so already missing from the available memory);
// here the model is closed before the memory is read, so they are added.
uint64_t model_plan(const DoctorOptions& o, int threads, std::vector<Finding>* out) {
  if (o.model_path.empty()) return 0;
  try {
    std::unique_ptr<Model> m = Model::open(o.model_path, reproducible_load());
    EngineOptions eo;
    eo.n_seq_max = 1;
    eo.memory_budget = 1;  // the plan only; availability is checked under the root
    const MemoryPlan p = plan_engine_memory(*m, eo, resolve_context(*m, 0));
    out->push_back({"model", "ok", m->describe(), ""});
    check_kernel_plan(*m, threads, out);
    return p.total() + m->weights().packed_bytes;
  } catch (const Error& e) {
    out->push_back({"model", "fail", e.what(), "check the path, or the file with 'brisk verify'"});
    return 0;
  }
}

}  // namespace

nlohmann::ordered_json doctor(const DoctorOptions& o) {
  std::vector<Finding> f;
  const CpuInfo cpu = read_cpuinfo(o.root);
  int cores = 1, cpus = 1;
  count_cores(o.root, &cores, &cpus);
  const double quota = cgroup_limits(o.root).cpu_quota;
  int threads = o.n_threads > 0 ? o.n_threads : quota_limited_threads(cores, quota);
  // On this machine, exactly what a thread pool would pick (hwloc's allowed
  // cores, which an affinity mask or cpuset may narrow).
  if (o.root.empty() && o.n_threads <= 0) threads = default_thread_count(physical_core_count());
  const NewMemory new_memory = o.measure ? probe_new_memory(threads) : NewMemory{};
  check_cpu(o, cpu, &f);
  check_cores(o, cores, cpus, quota, threads, &f);
  check_frequency(o, &f);
  const uint64_t plan = model_plan(o, threads, &f);
  check_memory(o, plan, &f);
  check_disk(o, &f);
  if (o.measure) {
    measure_disk(o, &f);
    measure_bandwidth(o, threads, &f);
    report_new_memory(new_memory, plan, &f);
    measure_throttling(o, threads, &f);
  }
  nlohmann::ordered_json j;
  j["threads"] = threads;
  j["checks"] = nlohmann::ordered_json::array();
  int counts[4] = {0, 0, 0, 0};
  for (const Finding& x : f) {
    j["checks"].push_back({{"check", x.check}, {"status", x.status}, {"value", x.value}, {"advice", x.advice}});
    counts[x.status == "ok" ? 0 : x.status == "warn" ? 1 : x.status == "fail" ? 2 : 3]++;
  }
  j["ok"] = counts[0];
  j["warn"] = counts[1];
  j["fail"] = counts[2];
  j["info"] = counts[3];
  return j;
}

}  // namespace brisk::sys
