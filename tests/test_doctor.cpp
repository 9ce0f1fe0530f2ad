// SPDX-License-Identifier: MIT
// `brisk doctor` on fake /proc and /sys trees: each WARN and FAIL path, a
// healthy machine, cgroup v1 and v2 quotas, network filesystems.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "brisk/brisk.h"
#include "brisk/brisk_experimental.h"
#include "model/synthetic.h"
#include "system/cgroup.h"
#include "test_data.h"

namespace fs = std::filesystem;

namespace {

void put(const fs::path& root, const std::string& rel, const std::string& text) {
  const fs::path p = root / rel;
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// A machine with 2 cores of 2 SMT threads each, AVX2, plenty of memory.
fs::path healthy_tree(const std::string& name) {
  const fs::path root = brisk::test::scratch_dir() / name;
  fs::remove_all(root);
  put(root, "proc/cpuinfo",
      "processor\t: 0\nmodel name\t: Test CPU 9000\nflags\t\t: fpu sse2 avx avx2 fma f16c\n\n"
      "processor\t: 1\nmodel name\t: Test CPU 9000\nflags\t\t: fpu sse2 avx avx2 fma f16c\n");
  put(root, "proc/meminfo", "MemTotal:       16000000 kB\nMemAvailable:   12000000 kB\nSwapTotal:       2000000 kB\n"
                            "SwapFree:        2000000 kB\n");
  for (int cpu = 0; cpu < 4; ++cpu) {
    const std::string d = "sys/devices/system/cpu/cpu" + std::to_string(cpu);
    put(root, d + "/topology/core_id", std::to_string(cpu / 2) + "\n");
    put(root, d + "/topology/physical_package_id", "0\n");
    put(root, d + "/cpufreq/scaling_governor", "performance\n");
  }
  put(root, "sys/devices/system/cpu/intel_pstate/no_turbo", "0\n");
  put(root, "sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never\n");
  put(root, "proc/self/cgroup", "0::/\n");
  put(root, "sys/fs/cgroup/cpu.max", "max 100000\n");
  put(root, "sys/fs/cgroup/memory.max", "max\n");
  put(root, "proc/self/mountinfo", "22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n");
  put(root, "sys/dev/block/259:2/queue/rotational", "0\n");
  return root;
}

// The doctor's report, as JSON, for these options.
nlohmann::json run_doctor(const brisk_doctor_options& o) {
  brisk_doctor_report* rep = nullptr;
  REQUIRE(brisk_doctor_run(&o, &rep) == BRISK_OK);
  size_t needed = 0;
  CHECK(brisk_doctor_report_json(rep, nullptr, 0, &needed) == BRISK_ERR_BUFFER_TOO_SMALL);
  std::string text(needed, '\0');
  REQUIRE(brisk_doctor_report_json(rep, text.data(), text.size(), &needed) == BRISK_OK);
  brisk_doctor_report_free(rep);
  text.resize(needed - 1);
  return nlohmann::json::parse(text);
}

// The checks that read files, on the tree at root.
nlohmann::json doctor(const fs::path& root, const std::string& model) {
  brisk_doctor_options o;
  brisk_doctor_options_init(&o);
  const std::string r = root.string();
  o.root = r.c_str();
  o.model_path = model.empty() ? nullptr : model.c_str();
  o.measure = 0;
  return run_doctor(o);
}

std::string status_of(const nlohmann::json& report, const std::string& check) {
  for (const auto& c : report["checks"])
    if (c["check"] == check) return c["status"];
  return "absent";
}

std::string advice_of(const nlohmann::json& report, const std::string& check) {
  for (const auto& c : report["checks"])
    if (c["check"] == check) return c["advice"];
  return "";
}

std::string value_of(const nlohmann::json& report, const std::string& check) {
  for (const auto& c : report["checks"])
    if (c["check"] == check) return c["value"];
  return "";
}

}  // namespace

TEST_CASE("doctor: the kernel plan a load would use: none yet, cached, or ignored and why", "[doctor][plan]") {
  BRISK_TEST_FILE(model, "models/stories260K.gguf");
  const fs::path root = healthy_tree("doctor-plan");
  const fs::path cache = brisk::test::scratch_dir() / "doctor-plan-cache";
  REQUIRE(setenv("BRISK_CACHE_DIR", cache.c_str(), 1) == 0);
  nlohmann::json r = doctor(root, model);
  CHECK(status_of(r, "plan") == "info");
  CHECK(value_of(r, "plan").find("no kernel plan cached") != std::string::npos);
  CHECK(advice_of(r, "plan").find("brisk tune") != std::string::npos);

  // A load with the doctor's thread count (2 in the healthy tree) measures
  // and caches one; the doctor then reads it.
  brisk_model_options mo;
  brisk_model_options_init(&mo);
  mo.plan_mode = BRISK_PLAN_AUTO;
  mo.plan_threads = 2;
  brisk_model* m = nullptr;
  REQUIRE(brisk_model_open(model.c_str(), &mo, &m) == BRISK_OK);
  brisk_model_close(m);
  r = doctor(root, model);
  const std::string status = status_of(r, "plan");
  INFO(value_of(r, "plan"));
  CHECK((status == "ok" || status == "info"));  // info: a variant is pending
  CHECK(value_of(r, "plan").find("measured ") == 0);
  CHECK(value_of(r, "plan").find("decode:") != std::string::npos);
  if (status == "info") CHECK(advice_of(r, "plan").find("pending") != std::string::npos);

  // A damaged cache file is reported as ignored, with the reason.
  for (const auto& e : fs::directory_iterator(cache)) std::ofstream(e.path(), std::ios::trunc) << "{";
  r = doctor(root, model);
  CHECK(status_of(r, "plan") == "warn");
  CHECK(value_of(r, "plan").find("not valid JSON") != std::string::npos);
  unsetenv("BRISK_CACHE_DIR");
}

TEST_CASE("doctor: a healthy machine is all OK", "[doctor]") {
  BRISK_TEST_FILE(model, "models/stories260K.gguf");
  const fs::path root = healthy_tree("doctor-healthy");
  const nlohmann::json r = doctor(root, model);
  for (const char* c : {"cpu", "cores", "governor", "turbo", "model", "memory", "cgroup", "swap", "thp", "disk"})
    CHECK(status_of(r, c) == "ok");
  CHECK(r["fail"] == 0);
  CHECK(r["warn"] == 0);
  CHECK(r["threads"] == 2);  // physical cores, not the 4 SMT siblings
}

TEST_CASE("doctor: the memory a model needs counts its packed weights", "[doctor]") {
  // Weights much larger than the KV cache and scratch: many layers, a short
  // context. Every matrix is Q4_0, so a load packs them all into memory of
  // its own, which the figure must count (the file's pages are released).
  brisk::SyntheticShape s = brisk::find_synthetic_shape("tiny");
  s.name = "doctor-deep";
  s.n_embd = 512, s.n_layer = 16, s.n_ff = 2048, s.n_vocab = 512, s.n_ctx = 64;
  const std::string model = (brisk::test::scratch_dir() / "doctor-deep-q4_0.gguf").string();
  brisk::write_synthetic_model(s, brisk::TensorType::Q4_0, 5, model, 1);
  const nlohmann::json r = doctor(healthy_tree("doctor-deep"), model);
  INFO(value_of(r, "model"));
  CHECK(status_of(r, "model") == "ok");
  const std::string value = value_of(r, "memory");
  INFO(value);
  std::smatch mt;
  REQUIRE(std::regex_search(value, mt, std::regex(R"(needs ([0-9]+) MiB)")));
  CHECK(std::stod(mt[1].str()) >= static_cast<double>(fs::file_size(model)) / (1024 * 1024));
}

TEST_CASE("doctor: powersave, no turbo, swap in use, THP off and a spinning disk are warnings", "[doctor]") {
  BRISK_TEST_FILE(model, "models/stories260K.gguf");
  const fs::path root = healthy_tree("doctor-slow");
  for (int cpu = 0; cpu < 4; ++cpu)
    put(root, "sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/cpufreq/scaling_governor", "powersave\n");
  put(root, "sys/devices/system/cpu/intel_pstate/no_turbo", "1\n");
  put(root, "proc/meminfo", "MemTotal:       16000000 kB\nMemAvailable:   12000000 kB\nSwapTotal:       2000000 kB\n"
                            "SwapFree:        1000000 kB\n");
  put(root, "sys/kernel/mm/transparent_hugepage/enabled", "always madvise [never]\n");
  // A partition of a rotational disk: the queue is the parent's.
  put(root, "proc/self/mountinfo", "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n");
  fs::create_directories(root / "sys/block/sda/sda1");
  put(root, "sys/block/sda/queue/rotational", "1\n");
  fs::create_directories(root / "sys/dev/block");
  fs::create_directory_symlink(root / "sys/block/sda/sda1", root / "sys/dev/block/8:1");
  put(root, "proc/cpuinfo", "processor\t: 0\nmodel name\t: Old CPU\nflags\t\t: fpu sse2\n");
  const nlohmann::json r = doctor(root, model);
  CHECK(status_of(r, "governor") == "warn");
  CHECK(advice_of(r, "governor").find("performance") != std::string::npos);
  CHECK(status_of(r, "turbo") == "warn");
  CHECK(status_of(r, "swap") == "warn");
  CHECK(status_of(r, "thp") == "warn");
  CHECK(status_of(r, "disk") == "warn");
  CHECK(advice_of(r, "disk").find("spinning") != std::string::npos);
  CHECK(status_of(r, "cpu") == "warn");  // no AVX2: portable kernels
  CHECK(r["fail"] == 0);
}

TEST_CASE("doctor: cgroup limits and too little memory fail, the quota sets the threads", "[doctor]") {
  BRISK_TEST_FILE(model, "models/stories260K.gguf");
  const fs::path root = healthy_tree("doctor-cgroup");
  put(root, "proc/self/cgroup", "0::/job/pod\n");
  put(root, "sys/fs/cgroup/job/cpu.max", "150000 100000\n");
  put(root, "sys/fs/cgroup/job/pod/cpu.max", "max 100000\n");
  put(root, "sys/fs/cgroup/job/pod/memory.max", "1000000\n");
  put(root, "sys/fs/cgroup/job/pod/memory.current", "500000\n");
  put(root, "proc/meminfo", "MemTotal:       16000 kB\nMemAvailable:   1000 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n");
  const nlohmann::json r = doctor(root, model);
  CHECK(status_of(r, "cgroup") == "fail");
  CHECK(status_of(r, "memory") == "fail");
  CHECK(status_of(r, "cores") == "warn");
  CHECK(r["threads"] == 1);  // a 1.5-CPU quota on an ancestor: one whole CPU
  CHECK(r["fail"] == 2);
}

TEST_CASE("doctor: cgroup v1 quota, a network filesystem and an unreadable model", "[doctor]") {
  const fs::path root = healthy_tree("doctor-v1");
  fs::remove(root / "sys/fs/cgroup/cpu.max");
  fs::remove(root / "sys/fs/cgroup/memory.max");
  put(root, "proc/self/cgroup", "5:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n");
  put(root, "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "100000\n");
  put(root, "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
  put(root, "sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes", "9223372036854771712\n");
  const brisk::sys::CgroupLimits lim = brisk::sys::cgroup_limits(root.string());
  CHECK(lim.version == "v1");
  CHECK(lim.cpu_quota == Approx(1.0));
  CHECK(lim.memory_limit == 0);  // the "unlimited" huge number
  put(root, "proc/self/mountinfo",
      "22 1 259:2 / / rw - ext4 /dev/nvme0n1p2 rw\n40 22 0:50 / /models rw - nfs4 server:/export rw\n");
  const nlohmann::json r = doctor(root, "/models/nope.gguf");
  CHECK(status_of(r, "disk") == "warn");
  CHECK(advice_of(r, "disk").find("--no-mmap") != std::string::npos);
  CHECK(status_of(r, "model") == "fail");
  CHECK(r["threads"] == 1);
}

TEST_CASE("doctor: default threads follow the quota", "[doctor]") {
  CHECK(brisk::sys::quota_limited_threads(8, 0) == 8);
  CHECK(brisk::sys::quota_limited_threads(8, 2.5) == 2);
  CHECK(brisk::sys::quota_limited_threads(8, 0.5) == 1);
  CHECK(brisk::sys::quota_limited_threads(4, 16) == 4);
}

TEST_CASE("doctor: measures how fast new memory becomes usable, against memory already touched", "[doctor]") {
  brisk_doctor_options o;
  brisk_doctor_options_init(&o);
  o.n_threads = 2;
  o.load_seconds = 0;  // no throttling test
  const nlohmann::json r = run_doctor(o);
  const std::string status = status_of(r, "new memory"), value = value_of(r, "new memory");
  INFO(value);
  REQUIRE((status == "ok" || status == "warn"));
  CHECK(value.find("on first touch") != std::string::npos);
  CHECK(value.find("already touched is written at") != std::string::npos);
  // Both rates are figures, not placeholders.
  std::smatch mt;
  REQUIRE(std::regex_search(value, mt, std::regex(R"(usable at ([0-9.]+) GB/s.* written at ([0-9.]+) GB/s)")));
  CHECK(std::stod(mt[1].str()) > 0);
  CHECK(std::stod(mt[2].str()) > 0);
  if (status == "warn") CHECK(advice_of(r, "new memory").find("one process running") != std::string::npos);
  CHECK(value.find("loading this model") == std::string::npos);  // no model given
}
