// SPDX-License-Identifier: MIT
// `brisk doctor`: what on this machine slows brisk down, each finding with
// OK/WARN/FAIL and what to do. Checks that read files go through a root
// prefix so tests run them on a fake /proc and /sys; checks that measure
// (memory bandwidth, new memory, the model's disk, a sustained load) run only
// when asked.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace brisk::sys {

struct DoctorOptions {
  std::string root;        // "" = this machine
  std::string model_path;  // "" = no model checks
  int n_threads = 0;       // 0 = brisk's default
  double load_seconds = 20;  // the throttling test; 0 skips it
  bool measure = true;     // false: only read files (no bandwidth, new-memory, disk or load test, no AMX request)
  // Called during the long measurements with (done, total) seconds; returns
  // true to cancel. May be empty.
  std::function<bool(double done, double total)> progress;
};

struct Finding {
  std::string check;   // "cpu", "governor", ...
  std::string status;  // "ok", "warn", "fail", "info"
  std::string value;   // what was found
  std::string advice;  // what to do ("" when nothing)
};

// Runs every check; the JSON object holds "checks" (the findings in order),
// "threads" (the -t brisk will choose) and counts per status.
nlohmann::ordered_json doctor(const DoctorOptions& options);

// ---- pieces, in doctor_checks.cpp and doctor_measure.cpp --------------
struct CpuInfo {
  std::string model;
  std::vector<std::string> flags;
  bool has(const std::string& f) const;
};
CpuInfo read_cpuinfo(const std::string& root);
// Physical cores and logical CPUs online under root/sys (cpuinfo if absent).
void count_cores(const std::string& root, int* cores, int* cpus);

void check_cpu(const DoctorOptions& o, const CpuInfo& cpu, std::vector<Finding>* out);
void check_cores(const DoctorOptions& o, int cores, int cpus, double quota, int threads, std::vector<Finding>* out);
void check_frequency(const DoctorOptions& o, std::vector<Finding>* out);
void check_memory(const DoctorOptions& o, uint64_t plan_bytes, std::vector<Finding>* out);
void check_disk(const DoctorOptions& o, std::vector<Finding>* out);

void measure_disk(const DoctorOptions& o, std::vector<Finding>* out);
void measure_bandwidth(const DoctorOptions& o, int threads, std::vector<Finding>* out);
// How fast new memory becomes usable, first thing (before the model check
// and the other probes free memory the system would hand out again at once),
// and its finding; plan_bytes: what the model needs (0 without one), for the
// time its new memory costs at each start.
struct NewMemory {
  double fresh_gbs = 0, touched_gbs = 0;
};
NewMemory probe_new_memory(int threads);
void report_new_memory(const NewMemory& m, uint64_t plan_bytes, std::vector<Finding>* out);
void measure_throttling(const DoctorOptions& o, int threads, std::vector<Finding>* out);

}  // namespace brisk::sys
