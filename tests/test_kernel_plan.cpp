// SPDX-License-Identifier: MIT
// The kernel planner (model/kernel_plan.h, plan_cache.h): a measured plan is
// cached and read back on the next load; a corrupt, stale or foreign cache is
// ignored with a warning and measured again; the fixed plan is the ISA
// defaults; whatever the plan chose computes what the fixed plan computes.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <ctime>
#include <sys/wait.h>
#include <tuple>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "brisk/brisk.h"
#include "kernels/variants.h"
#include "model/kernel_plan.h"
#include "model/model.h"
#include "model/plan_cache.h"
#include "model/synthetic.h"

using namespace brisk;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "brisk-plan-XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// A small model whose matrices have packed and row-major candidates.
const std::string& q4_model() {
  static TempDir dir;
  static const std::string path = [] {
    const std::string p = (dir.path / "tiny-q4_0.gguf").string();
    write_synthetic_model(find_synthetic_shape("tiny"), TensorType::Q4_0, 7, p, 1);
    return p;
  }();
  return path;
}

// The JSON documents among a command's output lines (those starting with
// '{'); stderr may add warnings between them, as a slow machine (or one under
// emulation) reaching the planning budget does.
std::vector<nlohmann::json> json_lines(const std::string& text) {
  std::vector<nlohmann::json> rows;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line[0] == '{') rows.push_back(nlohmann::json::parse(line));
  return rows;
}

// Runs the brisk CLI ($BRISK_BIN) with args, stdout and stderr to a file
// in dir: its exit code and what it printed.
std::pair<int, std::string> run_cli(const TempDir& dir, const std::string& args) {
  const char* bin = std::getenv("BRISK_BIN");
  REQUIRE(bin);
  const std::string out = (dir.path / "out.txt").string();
  const std::string cmd = std::string(bin) + " " + args + " >" + out + " 2>&1 </dev/null";
  const int st = std::system(cmd.c_str());
  std::ifstream in(out);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  INFO(text);
  CHECK(WIFEXITED(st));
  return {WEXITSTATUS(st), text};
}

struct Opened {
  std::unique_ptr<Model> model;
  std::vector<std::string> warnings;
};

Opened open_with(PlanMode mode, const std::string& cache_dir, double budget = 30, double confirm_after = 600) {
  Opened o;
  ModelOpenOptions mo;
  mo.plan.mode = mode;
  mo.plan.confirm_after_seconds = confirm_after;
  mo.plan.cache_dir = cache_dir;
  mo.plan.n_threads = 2;
  mo.plan.budget_seconds = budget;
  mo.plan.log = [&o](int level, const std::string& msg) {
    if (level <= 1) o.warnings.push_back(msg);
  };
  o.model = Model::open(q4_model(), mo);
  return o;
}

std::vector<std::string> kernel_names(const KernelPlan& p) {
  std::vector<std::string> out;
  for (const TypePlan& tp : p.types) {
    out.push_back(std::string(type_name(tp.type)) + (tp.packed ? " packed" : " rows"));
    for (const auto& k : tp.kernel) out.push_back(k.name);
  }
  return out;
}

std::vector<fs::path> plan_files(const fs::path& dir) {
  std::vector<fs::path> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind("kernel-plan-", 0) == 0) out.push_back(e.path());
  return out;
}

}  // namespace

TEST_CASE("the fixed plan is each ISA's default and is not cached", "[plan]") {
  TempDir cache;
  Opened o = open_with(PlanMode::fixed, cache.path.string());
  const KernelPlan& p = o.model->kernel_plan();
  CHECK(p.source == "fixed");
  REQUIRE(!p.types.empty());
  for (const TypePlan& tp : p.types) {
    const TypePlan def = default_type_plan(tp.type);
    CHECK(tp.packed == def.packed);
    for (int c = 0; c < kernels::kColClasses; ++c) CHECK(tp.kernel[c].kernel == def.kernel[c].kernel);
  }
  CHECK(plan_files(cache.path).empty());
  CHECK(o.warnings.empty());
}

TEST_CASE("a measured plan is cached and read back on the next load", "[plan]") {
  TempDir cache;
  Opened a = open_with(PlanMode::automatic, cache.path.string());
  const KernelPlan& pa = a.model->kernel_plan();
  CHECK(pa.source == "measured");
  CHECK(a.warnings.empty());
  REQUIRE(plan_files(cache.path).size() == 1);
  CHECK(pa.cache_file == plan_files(cache.path)[0].string());
  // Every chosen kernel exists here and fits the layout chosen for its type.
  for (const TypePlan& tp : pa.types)
    for (const auto& k : tp.kernel) {
      REQUIRE(k.kernel != nullptr);
      CHECK(k.packed == tp.packed);
    }
  // The matrices run what the plan says.
  for (const LayerWeights& L : a.model->weights().layers) {
    const TypePlan* tp = pa.find(L.wq.type);
    REQUIRE(tp != nullptr);
    CHECK(L.wq.packed == tp->packed);
    for (int c = 0; c < kernels::kColClasses; ++c) CHECK(L.wq.kernels[c] == tp->kernel[c].kernel);
  }

  Opened b = open_with(PlanMode::automatic, cache.path.string());
  CHECK(b.model->kernel_plan().source == "cached");
  CHECK(kernel_names(b.model->kernel_plan()) == kernel_names(pa));
  CHECK(b.warnings.empty());

  // measure ignores the cache and writes it again.
  Opened c = open_with(PlanMode::measure, cache.path.string());
  CHECK(c.model->kernel_plan().source == "measured");
  CHECK(plan_files(cache.path).size() == 1);
  CHECK(c.model->kernel_plan().describe().find("measured") != std::string::npos);
}

TEST_CASE("a corrupt, stale or foreign cached plan is ignored with a warning and measured again", "[plan]") {
  TempDir cache;
  Opened first = open_with(PlanMode::automatic, cache.path.string());
  REQUIRE(plan_files(cache.path).size() == 1);
  const fs::path file = plan_files(cache.path)[0];
  std::ifstream in(file);
  const nlohmann::json good = nlohmann::json::parse(in);

  auto reopen_with = [&](const std::string& text, const std::string& why) {
    INFO(why);
    {
      std::ofstream out(file, std::ios::trunc);
      out << text;
    }
    Opened o = open_with(PlanMode::automatic, cache.path.string());
    CHECK(o.model->kernel_plan().source == "measured");
    REQUIRE(o.warnings.size() == 1);
    CHECK(o.warnings[0].find(file.string()) != std::string::npos);
    CHECK(o.warnings[0].find(why) != std::string::npos);
    // Rewritten: the next load reads it.
    Opened again = open_with(PlanMode::automatic, cache.path.string());
    CHECK(again.model->kernel_plan().source == "cached");
    CHECK(again.warnings.empty());
  };
  reopen_with("{\"brisk_kernel_plan\": 1, \"key\": {", "not valid JSON");
  reopen_with(std::string("\0\0\0garbage", 10), "not valid JSON");
  nlohmann::json j = good;
  j["key"]["cpu"] = "another CPU";
  reopen_with(j.dump(), "another machine");
  j = good;
  j["brisk_kernel_plan"] = kPlanVersion + 1;
  reopen_with(j.dump(), "another planner version");
  j = good;
  j["types"][0]["kernels"][0] = "avx9000.packed.q4_0";
  reopen_with(j.dump(), "does not exist here");
  j = good;
  j["types"][0].erase("gbps");
  reopen_with(j.dump(), "malformed");
  j = good;
  j["types"][0]["pending"][1] = "avx9000.packed.q4_0";
  reopen_with(j.dump(), "does not exist here");
  j = good;
  j.erase("measured_at");
  reopen_with(j.dump(), "malformed");
}

TEST_CASE("a variant that beat the baseline runs only once a second measuring, apart in time, agrees", "[plan]") {
  using kernels::KernelVariant;
  const std::vector<KernelVariant> vars = kernels::matmul_variants(TensorType::Q4_0);
  TypePlan base = default_type_plan(TensorType::Q4_0);
  const KernelVariant* other = nullptr;
  for (const KernelVariant& v : vars)
    if (v.packed == base.packed && v.kernel != base.kernel[0].kernel && v.min_cols <= 1) other = &v;
  if (!other) {
    WARN("skipped: this machine has one Q4_0 kernel for its layout");
    return;
  }
  const double now = 1e9, after = 600;
  // No earlier measuring: pending since now, the baseline runs.
  TypePlan tp = base;
  plan_settle_winner(tp, 0, *other, 70, nullptr, 0, now, after);
  CHECK(tp.kernel[0].kernel == base.kernel[0].kernel);
  CHECK(tp.pending[0].kernel == other->kernel);
  CHECK(tp.pending_since[0] == now);
  CHECK(tp.pending_gbps[0] == 70);
  // It won 20 minutes ago (pending then): it runs.
  TypePlan prev = tp;
  tp = base;
  plan_settle_winner(tp, 0, *other, 71, &prev, now, now + 1200, after);
  CHECK(tp.kernel[0].kernel == other->kernel);
  CHECK(tp.gbps[0] == 71);
  CHECK(tp.pending[0].name == nullptr);
  // It won 5 minutes ago: still pending, since its first win.
  tp = base;
  plan_settle_winner(tp, 0, *other, 71, &prev, now, now + 300, after);
  CHECK(tp.kernel[0].kernel == base.kernel[0].kernel);
  CHECK(tp.pending_since[0] == now);
  // The earlier plan ran it (confirmed then), measured an hour ago: it runs.
  prev = base;
  prev.kernel[0] = *other;
  tp = base;
  plan_settle_winner(tp, 0, *other, 71, &prev, now, now + 3600, after);
  CHECK(tp.kernel[0].kernel == other->kernel);
  // The earlier plan had the baseline for this class: pending.
  tp = base;
  plan_settle_winner(tp, 0, *other, 71, &base, now, now + 3600, after);
  CHECK(tp.pending[0].kernel == other->kernel);
  // Without a wait, a winner runs at once.
  tp = base;
  plan_settle_winner(tp, 0, *other, 71, nullptr, 0, now, 0);
  CHECK(tp.kernel[0].kernel == other->kernel);
  // Far ahead of a measured baseline (kRunPendingRatio): it runs meanwhile,
  // still pending; a little ahead: the baseline runs.
  tp = base;
  tp.gbps[0] = 40;
  plan_settle_winner(tp, 0, *other, 40 * kRunPendingRatio, nullptr, 0, now, after);
  CHECK(tp.kernel[0].kernel == other->kernel);
  CHECK(tp.gbps[0] == 40 * kRunPendingRatio);
  CHECK(tp.pending[0].kernel == other->kernel);
  CHECK(tp.pending_since[0] == now);
  tp = base;
  tp.gbps[0] = 40;
  plan_settle_winner(tp, 0, *other, 40 * kRunPendingRatio - 1, nullptr, 0, now, after);
  CHECK(tp.kernel[0].kernel == base.kernel[0].kernel);
  CHECK(tp.gbps[0] == 40);
  CHECK(tp.pending[0].kernel == other->kernel);
}

TEST_CASE("a load measures a cached plan's due pending variant again, and keeps it or drops it", "[plan]") {
  TempDir cache;
  Opened first = open_with(PlanMode::automatic, cache.path.string());
  REQUIRE(plan_files(cache.path).size() == 1);
  const fs::path file = plan_files(cache.path)[0];
  nlohmann::json j = nlohmann::json::parse(std::ifstream(file));
  // A variant of q4_0's layout other than its one-column kernel, pending.
  const TypePlan* tp = first.model->kernel_plan().find(TensorType::Q4_0);
  REQUIRE(tp != nullptr);
  const TypePlan base = default_type_plan(TensorType::Q4_0);
  if (tp->packed != base.packed) {
    // The measuring chose the other layout than the fixed plan's (with
    // BRISK_ISA=scalar, whose baseline is row-major, under load).
    WARN("skipped: the plan's q4_0 layout is not the fixed plan's, whose baseline this test pends against");
    return;
  }
  const std::vector<kernels::KernelVariant> vars = kernels::matmul_variants(TensorType::Q4_0);
  const kernels::KernelVariant* other = nullptr;
  for (const kernels::KernelVariant& v : vars)
    if (v.packed == tp->packed && v.kernel != base.kernel[0].kernel && v.min_cols <= 1) other = &v;
  if (!other) {
    WARN("skipped: this machine has one Q4_0 kernel for its layout");
    return;
  }
  size_t ti = 0;
  while (j["types"][ti]["type"] != "q4_0") ++ti;
  j["types"][ti]["kernels"][0] = base.kernel[0].name;
  j["types"][ti]["pending"][0] = other->name;
  j["types"][ti]["pending_gbps"][0] = 1.5;
  const double now = static_cast<double>(std::time(nullptr));
  auto with_pending_since = [&](double since) {
    j["types"][ti]["pending_since"][0] = since;
    std::ofstream(file, std::ios::trunc) << j.dump();
  };

  // Not due yet: the baseline runs, the variant stays pending and is shown.
  with_pending_since(now - 60);
  {
    Opened o = open_with(PlanMode::automatic, cache.path.string());
    const KernelPlan& p = o.model->kernel_plan();
    CHECK(p.source == "cached");
    CHECK(p.confirmed.empty());
    CHECK(p.find(TensorType::Q4_0)->kernel[0].kernel == base.kernel[0].kernel);
    CHECK(p.find(TensorType::Q4_0)->pending[0].kernel == other->kernel);
    CHECK(p.describe().find(std::string("pending: q4_0 1: ") + other->name) != std::string::npos);
    CHECK(o.warnings.empty());
  }
  // Pending but running already (it was far ahead of the baseline): it runs
  // until due.
  j["types"][ti]["kernels"][0] = other->name;
  with_pending_since(now - 60);
  {
    Opened o = open_with(PlanMode::automatic, cache.path.string());
    const KernelPlan& p = o.model->kernel_plan();
    CHECK(p.confirmed.empty());
    CHECK(p.find(TensorType::Q4_0)->kernel[0].kernel == other->kernel);
    CHECK(p.describe().find("runs already") != std::string::npos);
    for (const LayerWeights& L : o.model->weights().layers)
      if (L.wq.type == TensorType::Q4_0 && L.wq.packed == tp->packed) CHECK(L.wq.kernels[0] == other->kernel);
  }
  // Due (running already, as above): measured again against the baseline,
  // then either running or dropped for the baseline, and the cache says
  // which, with nothing pending.
  with_pending_since(now - 3600);
  Opened o = open_with(PlanMode::automatic, cache.path.string());
  const KernelPlan& p = o.model->kernel_plan();
  CHECK(p.source == "cached");
  INFO(p.describe());
  CHECK(p.confirmed.find(std::string("q4_0 1: ") + other->name) != std::string::npos);
  const TypePlan* now_tp = p.find(TensorType::Q4_0);
  CHECK(now_tp->pending[0].name == nullptr);
  const bool runs = now_tp->kernel[0].kernel == other->kernel;
  CHECK((runs || now_tp->kernel[0].kernel == base.kernel[0].kernel));
  CHECK(p.confirmed.find(runs ? " runs " : " dropped") != std::string::npos);
  for (const LayerWeights& L : o.model->weights().layers)
    if (L.wq.type == TensorType::Q4_0 && L.wq.packed == now_tp->packed) CHECK(L.wq.kernels[0] == now_tp->kernel[0].kernel);
  const nlohmann::json after = nlohmann::json::parse(std::ifstream(file));
  CHECK(after["types"][ti]["pending"][0] == "");
  CHECK(after["types"][ti]["kernels"][0] == now_tp->kernel[0].name);
  CHECK(after["measured_at"] == j["measured_at"]);
  // The next load reads it as it is.
  Opened again = open_with(PlanMode::automatic, cache.path.string());
  CHECK(again.model->kernel_plan().confirmed.empty());
  CHECK(kernel_names(again.model->kernel_plan()) == kernel_names(p));
}

TEST_CASE("a plan that cannot be cached still loads, and says why", "[plan]") {
  TempDir cache;
  const fs::path blocker = cache.path / "not-a-directory";
  std::ofstream(blocker) << "x";
  Opened o = open_with(PlanMode::automatic, (blocker / "sub").string());
  CHECK(o.model->kernel_plan().source == "measured");
  CHECK(o.model->kernel_plan().note.find("not cached") != std::string::npos);
  CHECK(o.warnings.size() == 1);
}

TEST_CASE("planning stops at its time budget and keeps the defaults for the rest", "[plan]") {
  TempDir cache;
  Opened o = open_with(PlanMode::measure, cache.path.string(), 0.0);
  const KernelPlan& p = o.model->kernel_plan();
  CHECK(p.note.find("budget") != std::string::npos);
  for (const TypePlan& tp : p.types)
    for (int c = 0; c < kernels::kColClasses; ++c) {
      CHECK(tp.gbps[c] == 0);
      CHECK(tp.kernel[c].kernel == default_type_plan(tp.type).kernel[c].kernel);
    }
}

TEST_CASE("a timed sample is cut to whole pairs of row groups within its bytes", "[plan]") {
  // 1000 bytes per row: 100 KB hold 100 rows, cut to 96 (three pairs of 16).
  CHECK(plan_sample_rows(5632, 1000, 100000) == 96);
  CHECK(plan_sample_rows(5632, 1000, uint64_t{1} << 40) == 5632);  // all of it, no more
  CHECK(plan_sample_rows(5632, 1000, 10) == 32);                   // at least one pair
  CHECK(plan_sample_rows(20, 1000, 10) == 20);                     // a small matrix whole
}

TEST_CASE("the preliminary rounds keep every default and the fastest few others near the best", "[plan]") {
  // Candidate 0 and 3 are the layouts' defaults; 3 is slow but still goes on.
  const std::vector<double> secs = {1.00, 0.90, 1.10, 3.00, 0.95, 1.20, 1.05, 2.00};
  const std::vector<bool> def = {true, false, false, true, false, false, false, false};
  const std::vector<size_t> kept = plan_finalists(secs, def);
  // The fastest first: 1 (0.90), 4 (0.95), 0 (default), 6 (1.05, the third
  // other); 2 (1.10) is within 1.25x of 0.90 but a fourth other; 7 is too slow.
  CHECK(kept == std::vector<size_t>{1, 4, 0, 6, 3});
  // Others beyond 1.25x of the fastest are dropped even when places are free.
  CHECK(plan_finalists({1.0, 1.3, 2.0}, {true, false, false}) == std::vector<size_t>{0});
  CHECK(plan_finalists({1.0, 0.5}, {true, false}) == std::vector<size_t>{1, 0});
}

TEST_CASE("a variant displaces the default only when clearly faster in every round", "[plan]") {
  // 10% faster in every round: it wins.
  CHECK(plan_variant_wins({0.90, 0.91, 0.92}, {1.00, 1.01, 1.00}, 0.03));
  // Its fastest round is far ahead, but one of the default's rounds was
  // faster (a disturbance of the variant's, or luck of the default's): no.
  CHECK_FALSE(plan_variant_wins({0.70, 1.20, 0.72}, {1.00, 1.00, 1.00}, 0.03));
  // Faster in every round, but by less than the margin: no.
  CHECK_FALSE(plan_variant_wins({0.99, 0.99, 0.99}, {1.00, 1.00, 1.00}, 0.03));
  CHECK_FALSE(plan_variant_wins({1.0}, {1.0}, 0.03));  // the default against itself
  CHECK_FALSE(plan_variant_wins({}, {1.0}, 0.03));
}

TEST_CASE("column counts map to the plan's classes, two columns a class of its own", "[plan]") {
  using kernels::ColClass;
  CHECK(kernels::col_class(1) == ColClass::one);
  CHECK(kernels::col_class(2) == ColClass::two);
  CHECK(kernels::col_class(3) == ColClass::few);
  CHECK(kernels::col_class(4) == ColClass::few);
  CHECK(kernels::col_class(5) == ColClass::batch);
  CHECK(kernels::col_class(31) == ColClass::batch);
  CHECK(kernels::col_class(32) == ColClass::prompt);
  for (int c = 0; c < kernels::kColClasses; ++c) CHECK(kernels::col_class_name(static_cast<ColClass>(c))[0] != '?');
}

TEST_CASE("the plan key names the machine and the model's shapes", "[plan]") {
  Opened o = open_with(PlanMode::fixed, "");
  const PlanKey a = make_plan_key(o.model->weights(), 2), b = make_plan_key(o.model->weights(), 1);
  CHECK(a.hash != b.hash);
  CHECK(a.hash.size() == 16);
  const nlohmann::json k = nlohmann::json::parse(a.json);
  for (const char* field : {"cpu", "isa", "l2", "threads", "plan_version", "build", "matrices", "kernels"})
    CHECK(k.contains(field));
  // The test binary's GNU build-id (GCC and ld here always write one).
  CHECK(k["build"].get<std::string>().size() >= 16);
  CHECK(plan_cache_dir("/x/y") == "/x/y");
}

TEST_CASE("brisk tune measures, caches and prints the plan, and run -v and bench print the plan in use", "[plan][cli]") {
  TempDir dir;
  const std::string cache = (dir.path / "cache").string();
  auto run = [&](const std::string& args) { return run_cli(dir, args); };
  auto [code, text] = run("tune -m " + q4_model() + " -t 2 --plan-cache " + cache + " --json");
  REQUIRE(code == 0);
  const std::vector<nlohmann::json> docs = json_lines(text);
  REQUIRE(docs.size() == 1);
  const nlohmann::json& j = docs[0];
  REQUIRE(j.at("plan").size() >= 2);
  CHECK(j["plan"][0].get<std::string>().find("measured") != std::string::npos);
  CHECK(j["plan"][1].get<std::string>().find("q4_0") != std::string::npos);
  CHECK(plan_files(cache).size() == 1);

  // The next load reads it (with the same thread count).
  std::tie(code, text) = run("run -m " + q4_model() + " -t 2 --plan auto --plan-cache " + cache + " -p hi -n 2 -v");
  CHECK(code == 0);
  CHECK(text.find("kernel plan: cached") != std::string::npos);
  std::tie(code, text) = run("run -m " + q4_model() + " --plan fixed -p hi -n 2 -v");
  CHECK(code == 0);
  CHECK(text.find("kernel plan: fixed") != std::string::npos);
  std::tie(code, text) = run("run -m " + q4_model() + " --plan sometimes -p hi -n 2");
  CHECK(code == 2);
  CHECK(text.find("--plan") != std::string::npos);
  std::tie(code, text) = run("tune -m " + (dir.path / "missing.gguf").string() + " --plan-cache " + cache);
  CHECK(code == 1);
}

TEST_CASE("brisk bench runs each plan of a --plan list, labelled, and checks the lists", "[plan][cli]") {
  TempDir dir;
  const std::string cache = (dir.path / "cache").string();
  const std::string common = "bench -m " + q4_model() + " -t 2 -r 1 -n 4 --window 2 --prompt-tokens 8 "
                             "--bandwidth-mib 0 --no-history ";
  auto [code, text] = run_cli(dir, common + "--json --interleave --plan fixed,auto --plan-cache " + cache);
  REQUIRE(code == 0);
  const std::vector<nlohmann::json> rows = json_lines(text);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0]["plan"] == "fixed");
  CHECK(rows[0]["kernel_plan"].get<std::string>().find("kernel plan: fixed") != std::string::npos);
  CHECK(rows[1]["plan"] == "auto");
  CHECK(rows[1]["kernel_plan"].get<std::string>().find("measured") != std::string::npos);
  CHECK(plan_files(cache).size() == 1);
  for (const nlohmann::json& r : rows) CHECK(r["gen_tokens_per_s"].get<double>() > 0);

  // Cache directories pair with the modes; labels name them when they differ.
  const std::string other = (dir.path / "other").string();
  std::tie(code, text) = run_cli(dir, common + "--plan auto --plan-cache " + cache + "," + other);
  CHECK(code == 0);
  CHECK(text.find("auto:" + cache) != std::string::npos);
  CHECK(text.find("auto:" + other) != std::string::npos);
  CHECK(text.find("kernel plan: cached") != std::string::npos);  // the first directory's, made above
  CHECK(plan_files(other).size() == 1);

  std::tie(code, text) = run_cli(dir, common + "--plan fixed,auto,measure --plan-cache a,b");
  CHECK(code == 2);
  CHECK(text.find("--plan-cache") != std::string::npos);
  std::tie(code, text) = run_cli(dir, common + "--plan fixed,often");
  CHECK(code == 2);
  CHECK(text.find("--plan must be") != std::string::npos);
}

TEST_CASE("brisk.h: plan options are checked and the plan is readable through the C API", "[plan][capi]") {
  TempDir dir;
  brisk_model_options mo;
  brisk_model_options_init(&mo);
  CHECK(mo.plan_mode == BRISK_PLAN_DEFAULT);
  CHECK(mo.plan_cache_dir == nullptr);
  brisk_model* m = nullptr;
  mo.plan_mode = 7;
  CHECK(brisk_model_open(q4_model().c_str(), &mo, &m) == BRISK_ERR_INVALID_ARGUMENT);
  CHECK(std::string(brisk_last_error()).find("plan_mode") != std::string::npos);
  CHECK(m == nullptr);
  mo.plan_mode = BRISK_PLAN_MEASURE;
  const std::string cache = (dir.path / "c").string();
  mo.plan_cache_dir = cache.c_str();
  mo.plan_threads = 1;
  REQUIRE(brisk_model_open(q4_model().c_str(), &mo, &m) == BRISK_OK);
  size_t needed = 0;
  char small[8];
  CHECK(brisk_model_kernel_plan(m, small, sizeof small, &needed) == BRISK_ERR_BUFFER_TOO_SMALL);
  std::string text(needed, '\0');
  REQUIRE(brisk_model_kernel_plan(m, text.data(), text.size(), &needed) == BRISK_OK);
  CHECK(text.rfind("kernel plan: measured", 0) == 0);
  CHECK(text.find("for 1 thread (weights packed in ") != std::string::npos);
  CHECK(plan_files(cache).size() == 1);
  brisk_model_close(m);
}
