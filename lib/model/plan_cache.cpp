// SPDX-License-Identifier: MIT
#include "model/plan_cache.h"

#include <elf.h>
#include <link.h>
#include <unistd.h>
#include <xxhash.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "core/atomic_file.h"
#include "core/error.h"
#include "kernels/variants.h"
#include "model/weights.h"

namespace brisk {

namespace {

using nlohmann::json;

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// The CPU's brand string, family, model and stepping: kernels that win on
// one core design can lose on the next, so a plan is only reused on the
// same one.
json cpu_identity() {
  json j;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  char brand[49] = {};
  if (__get_cpuid_max(0x80000000, nullptr) >= 0x80000004) {
    for (unsigned i = 0; i < 3; ++i) {
      __get_cpuid(0x80000002 + i, &a, &b, &c, &d);
      std::memcpy(brand + 16 * i, &a, 4), std::memcpy(brand + 16 * i + 4, &b, 4);
      std::memcpy(brand + 16 * i + 8, &c, 4), std::memcpy(brand + 16 * i + 12, &d, 4);
    }
  }
  std::string name(brand);
  while (!name.empty() && name.back() == ' ') name.pop_back();
  j["cpu"] = name.substr(name.find_first_not_of(' ') == std::string::npos ? 0 : name.find_first_not_of(' '));
  if (__get_cpuid(1, &a, &b, &c, &d)) {
    const unsigned family = (a >> 8) & 0xF, ext_family = (a >> 20) & 0xFF;
    const unsigned model = (a >> 4) & 0xF, ext_model = (a >> 16) & 0xF;
    j["family"] = family == 0xF ? family + ext_family : family;
    j["model"] = (family == 0x6 || family == 0xF) ? (ext_model << 4) + model : model;
    j["stepping"] = a & 0xF;
  }
#else
  j["cpu"] = "unknown";
#endif
  return j;
}

// The GNU build-id of the binary holding this code ("" if it has none): the
// same kernel code has read memory far slower in one build than in another
// (where the code lands), so a plan is only reused by the build that
// measured it.
std::string build_id() {
  struct Search {
    uintptr_t addr;
    std::string id;
  } search{reinterpret_cast<uintptr_t>(&build_id), ""};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* s = static_cast<Search*>(data);
        bool holds = false;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
          if (ph.p_type == PT_LOAD && s->addr >= lo && s->addr < lo + ph.p_memsz) holds = true;
        }
        if (!holds) return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_NOTE) continue;
          const auto* p = reinterpret_cast<const uint8_t*>(info->dlpi_addr + ph.p_vaddr);
          const uint8_t* end = p + ph.p_memsz;
          while (p + sizeof(ElfW(Nhdr)) <= end) {
            ElfW(Nhdr) n;
            std::memcpy(&n, p, sizeof n);
            const uint8_t* name = p + sizeof n;
            const uint8_t* desc = name + ((n.n_namesz + 3) & ~3u);
            if (desc + n.n_descsz > end) break;
            if (n.n_type == NT_GNU_BUILD_ID && n.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
              for (uint32_t k = 0; k < n.n_descsz; ++k) {
                char hex[3];
                std::snprintf(hex, sizeof hex, "%02x", desc[k]);
                s->id += hex;
              }
              return 1;
            }
            p = desc + ((n.n_descsz + 3) & ~3u);
          }
        }
        return 1;
      },
      &search);
  return search.id;
}

long cache_size(int name) {
  const long v = sysconf(name);
  return v > 0 ? v : 0;
}

}  // namespace

PlanKey make_plan_key(const Weights& weights, int n_threads) {
  json key = cpu_identity();
  key["plan_version"] = kPlanVersion;
  key["build"] = build_id();
  key["isa"] = kernels::isa_name(kernels::active_isa());
  key["l1d"] = cache_size(_SC_LEVEL1_DCACHE_SIZE);
  key["l2"] = cache_size(_SC_LEVEL2_CACHE_SIZE);
  key["l3"] = cache_size(_SC_LEVEL3_CACHE_SIZE);
  key["threads"] = n_threads;
  const char* repack = std::getenv("BRISK_REPACK");
  key["repack"] = !(repack && std::string(repack) == "0");
  std::string shapes;
  std::set<TensorType> types;
  for (Matrix* m : const_cast<Weights&>(weights).matmul_matrices()) {
    shapes += std::string(type_name(m->type)) + ":" + std::to_string(m->rows) + "x" + std::to_string(m->cols) + ";";
    types.insert(m->type);
  }
  key["matrices"] = hex64(XXH64(shapes.data(), shapes.size(), 0));
  // The candidates the planner would time for these types: a build that
  // adds, drops or re-marks a kernel measures again instead of reusing a
  // plan that never saw it.
  std::string cands;
  for (TensorType t : types)
    for (const kernels::KernelVariant& v : kernels::matmul_variants(t))
      cands += std::string(v.name) + "/" + std::to_string(v.min_cols) + "-" + std::to_string(v.max_cols) +
               (v.baseline ? "b" : "") + ";";
  key["kernels"] = hex64(XXH64(cands.data(), cands.size(), 0));
  PlanKey k;
  k.json = key.dump();
  k.hash = hex64(XXH64(k.json.data(), k.json.size(), 0));
  return k;
}

std::string plan_cache_dir(const std::string& option) {
  if (!option.empty()) return option;
  if (const char* d = std::getenv("BRISK_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/brisk";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/brisk";
  return "";
}

std::string plan_cache_path(const std::string& dir, const PlanKey& key) {
  return dir + "/kernel-plan-" + key.hash + ".json";
}

bool read_cached_plan(const std::string& path, const PlanKey& key, KernelPlan* plan, std::string* why) {
  why->clear();
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;  // absent: nothing to say
  std::stringstream ss;
  ss << f.rdbuf();
  json j;
  try {
    j = json::parse(ss.str());
  } catch (const std::exception&) {
    *why = "not valid JSON";
    return false;
  }
  try {
    if (!j.is_object() || j.value("brisk_kernel_plan", 0) != kPlanVersion) {
      *why = "written by another planner version";
      return false;
    }
    if (j.at("key").dump() != json::parse(key.json).dump()) {
      *why = "made for another machine, thread count or model shape";
      return false;
    }
    KernelPlan p;
    p.n_threads = j.at("threads").get<int>();
    p.measured_at = j.at("measured_at").get<double>();
    for (const json& t : j.at("types")) {
      TypePlan tp;
      if (!parse_type_name(t.at("type").get<std::string>(), &tp.type)) {
        *why = "unknown type " + t.at("type").get<std::string>();
        return false;
      }
      tp.packed = t.at("layout").get<std::string>() == "packed";
      const json &names = t.at("kernels"), &gbps = t.at("gbps"), &pending = t.at("pending"),
                 &pending_gbps = t.at("pending_gbps"), &pending_since = t.at("pending_since");
      for (const json* a : {&names, &gbps, &pending, &pending_gbps, &pending_since})
        if (a->size() != kernels::kColClasses) {
          *why = "wrong number of column classes";
          return false;
        }
      const std::vector<kernels::KernelVariant> vars = kernels::matmul_variants(tp.type);
      // The variant named, which must run here and read the type's layout.
      auto variant = [&](const std::string& name, kernels::KernelVariant* out) {
        const kernels::KernelVariant* v = kernels::find_variant(vars, name.c_str());
        if (!v || v->packed != tp.packed) {
          *why = "kernel '" + name + "' does not exist here";
          return false;
        }
        *out = *v;
        return true;
      };
      for (int c = 0; c < kernels::kColClasses; ++c) {
        if (!variant(names[c].get<std::string>(), &tp.kernel[c])) return false;
        tp.gbps[c] = gbps[c].get<double>();
        const std::string waiting = pending[c].get<std::string>();
        if (waiting.empty()) continue;
        if (!variant(waiting, &tp.pending[c])) return false;
        tp.pending_gbps[c] = pending_gbps[c].get<double>();
        tp.pending_since[c] = pending_since[c].get<double>();
      }
      p.types.push_back(tp);
    }
    *plan = std::move(p);
    return true;
  } catch (const std::exception& e) {
    *why = std::string("malformed: ") + e.what();
    return false;
  }
}

void write_cached_plan(const std::string& path, const PlanKey& key, const KernelPlan& plan) {
  json j;
  j["brisk_kernel_plan"] = kPlanVersion;
  j["key"] = json::parse(key.json);
  j["threads"] = plan.n_threads;
  j["measured_seconds"] = plan.seconds;
  j["measured_at"] = plan.measured_at;
  j["types"] = json::array();
  for (const TypePlan& tp : plan.types) {
    json t;
    t["type"] = type_name(tp.type);
    t["layout"] = tp.packed ? "packed" : "rows";
    t["kernels"] = json::array();
    t["gbps"] = json::array();
    t["pending"] = json::array();
    t["pending_gbps"] = json::array();
    t["pending_since"] = json::array();
    for (int c = 0; c < kernels::kColClasses; ++c) {
      t["kernels"].push_back(tp.kernel[c].name ? tp.kernel[c].name : "");
      t["gbps"].push_back(tp.gbps[c]);
      t["pending"].push_back(tp.pending[c].name ? tp.pending[c].name : "");
      t["pending_gbps"].push_back(tp.pending_gbps[c]);
      t["pending_since"].push_back(tp.pending_since[c]);
    }
    j["types"].push_back(t);
  }
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  if (ec) fail(BRISK_ERR_IO, "cannot create '" + std::filesystem::path(path).parent_path().string() + "': " + ec.message());
  write_file_atomic(path, j.dump(2) + "\n");
}

}  // namespace brisk
