// SPDX-License-Identifier: MIT
// The checks of `brisk doctor` that measure: the model file's read speed,
// memory read bandwidth against what the DIMMs should give, how fast new
// memory becomes usable, and a sustained load that shows whether the CPU
// throttles.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "core/huge_pages.h"
#include "engine/memory_plan.h"
#include "system/doctor.h"
#include "system/sysfs.h"
#include "threads/read_bandwidth.h"
#include "threads/thread_pool.h"

namespace brisk::sys {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string gbs(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB/s", v);
  return buf;
}

uint16_t u16(const std::string& raw, size_t off) {
  return off + 2 <= raw.size() ? static_cast<uint16_t>(static_cast<uint8_t>(raw[off]) | static_cast<uint8_t>(raw[off + 1]) << 8)
                               : 0;
}

// Peak bandwidth of the populated DIMMs from SMBIOS type 17 records (root
// only, usually): configured speed (MT/s) x data width. 0 when unreadable.
double dimm_peak_gbs(const std::string& root, int* n_dimms) {
  double peak = 0;
  *n_dimms = 0;
  for (const std::string& e : list_dir(root, "/sys/firmware/dmi/entries")) {
    if (e.rfind("17-", 0) != 0) continue;
    const std::optional<std::string> raw = read_text(root, "/sys/firmware/dmi/entries/" + e + "/raw");
    if (!raw || raw->size() < 0x17 || static_cast<uint8_t>((*raw)[0]) != 17) continue;
    const uint16_t size = u16(*raw, 0x0C), width = u16(*raw, 0x0A);
    if (size == 0 || width == 0 || width == 0xFFFF) continue;  // empty slot
    uint16_t speed = raw->size() >= 0x22 ? u16(*raw, 0x20) : 0;
    if (speed == 0 || speed == 0xFFFF) speed = u16(*raw, 0x15);
    if (speed == 0 || speed == 0xFFFF) continue;
    ++*n_dimms;
    peak += speed * 1e6 * (std::min<uint16_t>(width, 64) / 8.0) / 1e9;
  }
  return peak;
}

uint64_t throttle_events(const std::string& root) {
  uint64_t n = 0;
  for (const std::string& c : list_dir(root, "/sys/devices/system/cpu"))
    if (c.rfind("cpu", 0) == 0)
      n += read_u64(root, "/sys/devices/system/cpu/" + c + "/thermal_throttle/core_throttle_count").value_or(0);
  return n;
}

}  // namespace

void measure_disk(const DoctorOptions& o, std::vector<Finding>* out) {
  if (o.model_path.empty()) return;
  const int fd = ::open(o.model_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  // Drop the file's cached pages first, so the read comes from the device
  // (pages another process has mapped stay; the figure is then too high).
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  std::vector<char> buf(4 << 20);
  const uint64_t limit = uint64_t{256} << 20;
  uint64_t total = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (total < limit) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n <= 0) break;
    total += static_cast<uint64_t>(n);
  }
  const double s = std::max(seconds_since(t0), 1e-6);
  ::close(fd);
  char v[96];
  std::snprintf(v, sizeof v, "read %.0f MiB of the model at %.0f MB/s", total / 1048576.0, total / s / 1e6);
  Finding f{"disk_read", "ok", v, ""};
  if (total < (uint64_t{32} << 20)) {
    f.status = "info";
    f.value += " (too small a file to judge the disk)";
  } else if (total / s < 150e6) {
    f.status = "warn";
    f.advice = "loading the model is slow from this disk: copy it to a faster local disk, or keep it cached (--mlock)";
  }
  out->push_back(f);
}

void measure_bandwidth(const DoctorOptions& o, int threads, std::vector<Finding>* out) {
  ThreadPoolOptions po;
  po.n_threads = threads;
  ThreadPool pool(po);
  const ReadBandwidth bw = measure_read_bandwidth(pool, size_t{256} << 20, 5);
  int dimms = 0;
  const double peak = dimm_peak_gbs(o.root, &dimms);
  Finding f{"bandwidth", "ok", "memory reads at " + gbs(bw.median_gbs) + " with " + std::to_string(threads) + " threads", ""};
  if (peak <= 0) {
    f.status = "info";
    f.value += "; what the DIMMs should give is unknown (SMBIOS not readable: run as root to compare)";
  } else {
    char p[96];
    std::snprintf(p, sizeof p, "; %d DIMMs give at most %s (%.0f%% reached)", dimms, gbs(peak).c_str(),
                  100.0 * bw.median_gbs / peak);
    f.value += p;
    if (bw.median_gbs < 0.4 * peak)
      f.status = "warn",
      f.advice = "far below the DIMMs' peak: check that every memory channel has a DIMM, that other programs are "
                 "not streaming memory, and try more threads";
  }
  f.value += " (decoding reads every weight once per token, so this caps its speed)";
  out->push_back(f);
}

// A load writes fresh memory, the packed weights and the KV cache, and the
// kernel makes each page usable (zeroed) when it is first touched. On a bare
// machine that runs near memset speed; under a hypervisor that backs guest
// memory only when the guest first touches it, or takes freed memory back,
// it can be tens of times slower, and then it, not the disk, sets how long
// every start of brisk takes. The probe writes a buffer of the kind those use
// (HugePageBuffer) with `threads` threads, as the packing does, then writes
// it again for the rate of memory already touched.
NewMemory probe_new_memory(int threads) {
  constexpr size_t kBytes = size_t{256} << 20;
  HugePageBuffer buf(kBytes, "the new-memory probe");
  auto write_all = [&](int value) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    const size_t part = kBytes / static_cast<size_t>(threads);
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        const size_t from = part * static_cast<size_t>(t);
        std::memset(buf.data() + from, value, t + 1 == threads ? kBytes - from : part);
      });
    for (auto& th : pool) th.join();
    return static_cast<double>(kBytes) / std::max(seconds_since(t0), 1e-9) / 1e9;
  };
  NewMemory m;
  m.fresh_gbs = write_all(1);
  m.touched_gbs = write_all(2);
  return m;
}

void report_new_memory(const NewMemory& m, uint64_t plan_bytes, std::vector<Finding>* out) {
  Finding f{"new memory", "ok",
            "new memory becomes usable at " + gbs(m.fresh_gbs) +
                " on first touch (memory already touched is written at " + gbs(m.touched_gbs) + ")",
            ""};
  if (plan_bytes > 0) {
    char v[128];
    std::snprintf(v, sizeof v, "; loading this model needs about %s of it (weights, KV cache): about %.1f s",
                  format_bytes(plan_bytes).c_str(), static_cast<double>(plan_bytes) / 1e9 / m.fresh_gbs);
    f.value += v;
  }
  if (m.fresh_gbs < 2.0 && m.fresh_gbs * 10 < m.touched_gbs) {
    f.status = "warn";
    f.advice = "the system is slow to hand out new memory (typical of a virtual machine whose host backs guest "
               "memory on first use or takes freed memory back), so every start pays it for the weights and the KV "
               "cache: keep one process running (brisk serve, or one brisk_model shared by your program) rather "
               "than starting brisk per request; a shorter context (-c) needs less of it";
  }
  out->push_back(f);
}

void measure_throttling(const DoctorOptions& o, int threads, std::vector<Finding>* out) {
  const double total = o.load_seconds;
  if (total <= 0) return;
  const uint64_t events_before = throttle_events(o.root);
  std::atomic<bool> stop{false};
  std::vector<std::atomic<uint64_t>> work(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      // Dependent multiply-adds on several chains: the core's FP units at
      // full tilt, no memory traffic, the kind of load that heats a CPU.
      float a[8] = {1, 1.1f, 1.2f, 1.3f, 1.4f, 1.5f, 1.6f, 1.7f};
      while (!stop.load(std::memory_order_relaxed)) {
        for (int i = 0; i < 100000; ++i)
          for (float& x : a) x = x * 0.9999999f + 1e-7f;
        work[static_cast<size_t>(t)].fetch_add(1, std::memory_order_relaxed);
      }
      volatile float sink = a[0] + a[7];
      (void)sink;
    });
  }
  std::vector<double> rates;
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t last = 0;
  double last_t = 0;
  bool cancelled = false;
  while (last_t < total) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    uint64_t now_work = 0;
    for (auto& w : work) now_work += w.load(std::memory_order_relaxed);
    const double t = seconds_since(t0);
    rates.push_back(static_cast<double>(now_work - last) / std::max(t - last_t, 1e-6));
    last = now_work;
    last_t = t;
    if (o.progress && o.progress(std::min(t, total), total)) {
      cancelled = true;
      break;
    }
  }
  stop = true;
  for (auto& th : pool) th.join();
  const uint64_t events = throttle_events(o.root) - events_before;
  Finding f{"throttling", "ok", "", ""};
  if (cancelled || rates.size() < 5) {
    f.status = "info";
    f.value = "load test too short to judge";
    out->push_back(f);
    return;
  }
  // First and last fifth of the run, the first interval left out (start-up).
  const size_t k = std::max<size_t>(1, rates.size() / 5);
  double first = 0, end = 0;
  for (size_t i = 1; i <= k; ++i) first += rates[i];
  for (size_t i = rates.size() - k; i < rates.size(); ++i) end += rates[i];
  const double drop = first > 0 ? 1.0 - end / first : 0;
  char v[160];
  std::snprintf(v, sizeof v, "%.0f s of load on %d threads: speed at the end %.0f%% of the start", last_t, threads,
                100.0 * (1.0 - drop));
  f.value = v;
  if (events) f.value += "; " + std::to_string(events) + " thermal throttling events";
  if (drop > 0.10 || events > 0) {
    f.status = "warn";
    f.advice = "the CPU slows down under sustained load (heat or power limits): improve cooling, check the power "
               "profile, or use fewer threads (-t)";
  }
  out->push_back(f);
}

}  // namespace brisk::sys
