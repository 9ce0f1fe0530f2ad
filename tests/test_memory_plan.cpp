// SPDX-License-Identifier: MIT
// The memory plan: limits read from a fake /proc and /sys/fs/cgroup (v1, v2,
// MemAvailable, unreadable), every buffer counted, impossible configurations
// refused with the numbers before allocating, through the C API and the CLI.
#include <brisk/brisk.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "engine/memory_plan.h"
#include "model/model.h"
#include "test_data.h"
#include "threads/thread_pool.h"

namespace fs = std::filesystem;

namespace {

// A fake root: files given as path -> content.
struct FakeRoot {
  fs::path dir;
  explicit FakeRoot(const std::string& name) : dir(brisk::test::scratch_dir() / ("root-" + name)) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  FakeRoot& file(const std::string& rel, const std::string& content) {
    const fs::path p = dir / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << content;
    return *this;
  }
  brisk::MemoryLimit read() const { return brisk::read_memory_limit(dir.string()); }
};

constexpr uint64_t MiB = 1024ull * 1024ull;

}  // namespace

TEST_CASE("memory plan: MemAvailable alone", "[memory]") {
  FakeRoot r("meminfo");
  r.file("proc/meminfo", "MemTotal:       16000000 kB\nMemFree:         1000 kB\nMemAvailable:    4096 kB\n");
  const brisk::MemoryLimit m = r.read();
  CHECK(m.available == 4 * MiB);
  CHECK(m.source == "MemAvailable");
}

TEST_CASE("memory plan: a zero or missing MemAvailable is never 'unlimited'", "[memory]") {
  FakeRoot r("meminfo-zero");
  r.file("proc/meminfo", "MemTotal:       2048 kB\nMemAvailable:      0 kB\n");
  brisk::MemoryLimit m = r.read();
  CHECK(m.available == 2 * MiB);
  CHECK(m.source.find("MemTotal") != std::string::npos);

  FakeRoot empty("nothing");
  m = empty.read();  // nothing readable under the root: the physical memory size
  CHECK(m.available > 0);
  CHECK(m.available < (1ull << 50));
  CHECK(m.source.find("physical") != std::string::npos);
}

TEST_CASE("memory plan: cgroup v2 limits, the tightest level up to the root", "[memory]") {
  FakeRoot r("v2");
  r.file("proc/meminfo", "MemAvailable:    8000000 kB\n")
      .file("proc/self/cgroup", "0::/job/inner\n")
      .file("sys/fs/cgroup/job/memory.max", "1073741824\n")
      .file("sys/fs/cgroup/job/memory.current", "536870912\n")
      .file("sys/fs/cgroup/job/memory.stat", "anon 1\ninactive_file 268435456\nactive_file 5\n")
      .file("sys/fs/cgroup/job/inner/memory.max", "max\n")
      .file("sys/fs/cgroup/job/inner/memory.current", "1000\n");
  const brisk::MemoryLimit m = r.read();
  // 1 GiB limit, 512 MiB used of which 256 MiB reclaimable page cache.
  CHECK(m.available == 768 * MiB);
  CHECK(m.source.find("cgroup v2") != std::string::npos);
  CHECK(m.source.find("/job") != std::string::npos);
}

TEST_CASE("memory plan: cgroup v2 in a namespace (own cgroup mounted at the root)", "[memory]") {
  FakeRoot r("v2ns");
  r.file("proc/meminfo", "MemAvailable:    8000000 kB\n")
      .file("proc/self/cgroup", "0::/somewhere/not/mounted\n")
      .file("sys/fs/cgroup/memory.max", "104857600\n")
      .file("sys/fs/cgroup/memory.current", "0\n");
  CHECK(r.read().available == 100 * MiB);
}

TEST_CASE("memory plan: cgroup v1 limits, and the v1 'unlimited' value is no limit", "[memory]") {
  FakeRoot r("v1");
  r.file("proc/meminfo", "MemAvailable:    8000000 kB\n")
      .file("proc/self/cgroup", "9:pids:/\n4:memory:/a\n1:cpu,cpuacct:/\n")
      .file("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n")
      .file("sys/fs/cgroup/memory/memory.usage_in_bytes", "9000000000\n")
      .file("sys/fs/cgroup/memory/a/memory.limit_in_bytes", "2147483648\n")
      .file("sys/fs/cgroup/memory/a/memory.usage_in_bytes", "1073741824\n")
      .file("sys/fs/cgroup/memory/a/memory.stat", "cache 5\ntotal_inactive_file 0\n");
  const brisk::MemoryLimit m = r.read();
  CHECK(m.available == 1024 * MiB);
  CHECK(m.source.find("cgroup v1") != std::string::npos);

  FakeRoot loose("v1-loose");  // a cgroup allowing more than the machine has: MemAvailable wins
  loose.file("proc/meminfo", "MemAvailable:    1024 kB\n")
      .file("proc/self/cgroup", "4:memory:/a\n")
      .file("sys/fs/cgroup/memory/a/memory.limit_in_bytes", "2147483648\n")
      .file("sys/fs/cgroup/memory/a/memory.usage_in_bytes", "0\n");
  CHECK(loose.read().available == 1 * MiB);
  CHECK(loose.read().source == "MemAvailable");
}

TEST_CASE("memory plan: the real machine gives a finite, non-zero figure", "[memory]") {
  const brisk::MemoryLimit m = brisk::read_memory_limit();
  CHECK(m.available > 0);
  CHECK(!m.source.empty());
}

TEST_CASE("memory plan: every buffer counted, 0 threads is the real count, refusals name the numbers", "[memory]") {
  BRISK_TEST_FILE(path, "models/llama-2-tiny-random.gguf");
  brisk_model* handle = nullptr;
  REQUIRE(brisk_model_open(path.c_str(), nullptr, &handle) == BRISK_OK);
  // The plan itself, on the engine's model type (through the library's C++ side).
  brisk::MemoryRequest r;
  r.n_ctx = 1 << 20;
  r.n_seq = 1;
  r.max_tokens = 1 << 20;
  r.n_threads = 0;
  r.extra_logits_rows = 1 << 20;
  r.budget = 64 * MiB;
  // (The C++ Model is not reachable from the handle: reopen it.)
  auto model = brisk::Model::open(path, {});
  const brisk::MemoryPlan p = brisk::plan_memory(*model, r);
  CHECK(p.n_threads == brisk::physical_core_count());
  // Two copies of 2^20 rows of 32000 logits (forward pass and kept rows).
  CHECK(p.logits >= 2ull * (1ull << 20) * 32000ull * 4ull);
  CHECK(p.kv > 0);
  CHECK(p.scratch > 0);
  CHECK(p.available == 64 * MiB);
  try {
    brisk::require_fits(p, r, "a context of 1048576 tokens");
    FAIL("an impossible plan was approved");
  } catch (const brisk::Error& e) {
    CHECK(e.code() == BRISK_ERR_OUT_OF_MEMORY);
    const std::string msg = e.what();
    CHECK(msg.find("needs") != std::string::npos);
    CHECK(msg.find("64 MiB available") != std::string::npos);
    CHECK(msg.find("shorter context") != std::string::npos);
  }

  SECTION("brisk_perplexity with a context of 2^20 on a 32k vocabulary is refused at once") {
    brisk_ppl_options po;
    brisk_ppl_options_init(&po);
    po.n_ctx = 1u << 20;
    po.n_threads = 1;
    const std::string text = "Once upon a time there was a little girl.";
    brisk_ppl_result* res = nullptr;
    CHECK(brisk_perplexity(handle, nullptr, text.data(), text.size(), &po, &res) == BRISK_ERR_OUT_OF_MEMORY);
    CHECK(res == nullptr);
    const std::string msg = brisk_last_error();
    CHECK(msg.find("not enough memory") != std::string::npos);
    CHECK(msg.find("logits") != std::string::npos);
    CHECK(msg.find("available") != std::string::npos);
  }
  SECTION("sessions and engines refuse with the numbers and a suggestion") {
    brisk_session_options so;
    brisk_session_options_init(&so);
    so.n_ctx = 4096;
    so.memory_budget = 1 * MiB;
    brisk_session* s = nullptr;
    CHECK(brisk_session_create(handle, &so, &s) == BRISK_ERR_OUT_OF_MEMORY);
    CHECK(s == nullptr);
    CHECK(std::string(brisk_last_error()).find("1 MiB available") != std::string::npos);

    brisk_engine_options eo;
    brisk_engine_options_init(&eo);
    eo.n_ctx = 1u << 20;
    eo.n_seq_max = 64;
    eo.memory_budget = 256 * MiB;
    brisk_engine* e = nullptr;
    CHECK(brisk_engine_create(handle, &eo, &e) == BRISK_ERR_OUT_OF_MEMORY);
    const std::string msg = brisk_last_error();
    CHECK(msg.find("64 sequences x 1048576 context") != std::string::npos);
    CHECK(msg.find("256 MiB available") != std::string::npos);
    CHECK(msg.find("tokens fits with 64 sequences") != std::string::npos);
    CHECK(msg.find("sequences fit") != std::string::npos);
    CHECK(msg.find("Q8_0") != std::string::npos);
  }
  brisk_model_close(handle);
}

namespace {

struct CliResult {
  int code;
  std::string err;
};

CliResult run_brisk(const std::string& args) {
  const char* bin = std::getenv("BRISK_BIN");
  REQUIRE(bin);
  const std::string err = (brisk::test::scratch_dir() / "memory-err.txt").string();
  const int st = std::system((std::string(bin) + " " + args + " >/dev/null 2>" + err + " </dev/null").c_str());
  std::ifstream in(err);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : 128, std::string(std::istreambuf_iterator<char>(in), {})};
}

uint64_t mem_total() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  in >> key >> kb;
  return kb * 1024;
}

}  // namespace

TEST_CASE("memory plan: brisk ppl, run and bench refuse what cannot fit, with the numbers", "[memory][cli]") {
  BRISK_TEST_FILE(model, "models/llama-2-tiny-random.gguf");
  BRISK_TEST_FILE(text, "data/tinystories-valid-head.txt");
  // 2^20 positions of 32000 logits: 128 GiB, twice.
  CliResult r = run_brisk("ppl -m " + model + " -f " + text + " -c 1048576 -t 1");
  CHECK(r.code != 0);
  CHECK(r.err.find("not enough memory") != std::string::npos);
  CHECK(r.err.find("available") != std::string::npos);

  // 65536 sequences x ~4200 tokens of a 4-layer, 256-wide cache: hundreds of GiB.
  r = run_brisk("bench --synthetic tiny --parallel 65536 -n 4000 -r 1 --no-history -t 1");
  CHECK(r.code != 0);
  CHECK(r.err.find("not enough memory") != std::string::npos);
  CHECK(r.err.find("sequences") != std::string::npos);

  // A session of 2^24 tokens: 2^24 x 4 layers x 2 x 128 x 4 bytes (F32 cache) = 64 GiB.
  const std::string synth = (brisk::test::scratch_dir() / "tiny-memory.gguf").string();
  REQUIRE(run_brisk("synth --shape tiny -o " + synth).code == 0);
  if (mem_total() > 48ull * 1024 * MiB) {
    WARN("skipped the brisk run refusal: this machine has more memory than the configuration needs");
    return;
  }
  r = run_brisk("run -m " + synth + " -p hi -n 1 -c 16777216 --cache-type-k f32 --cache-type-v f32 -t 1");
  CHECK(r.code != 0);
  CHECK(r.err.find("not enough memory") != std::string::npos);
  CHECK(r.err.find("Q8_0") != std::string::npos);
}
