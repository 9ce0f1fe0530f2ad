// The `brisk` command as a user runs it: output, help, and one clear error
// with a non-zero exit for every kind of bad input.
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>
#include <vector>

#include "test_data.h"

namespace {

struct Result {
  int code;
  std::string out, err;
};

std::string slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Runs `brisk ARGS`, capturing stdout and stderr.
Result run_cli(const std::string& args) {
  const char* bin = std::getenv("BRISK_BIN");
  REQUIRE(bin);
  const std::string dir = brisk::test::scratch_dir().string();
  const std::string cmd = std::string(bin) + " " + args + " >" + dir + "/out.txt 2>" + dir + "/err.txt </dev/null";
  int st = std::system(cmd.c_str());
  return {WIFEXITED(st) ? WEXITSTATUS(st) : 128, slurp(dir + "/out.txt"), slurp(dir + "/err.txt")};
}

void write(const std::string& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

TEST_CASE("cli: help is complete", "[cli]") {
  Result r = run_cli("--help");
  CHECK(r.code == 0);
  for (const char* cmd : {"run", "bench", "tokenize", "synth"}) CHECK(r.out.find(cmd) != std::string::npos);
  r = run_cli("run --help");
  CHECK(r.code == 0);
  for (const char* opt : {"--temp", "--top-k", "--top-p", "--min-p", "--repeat-penalty", "--seed", "--threads",
                          "--ctx-size", "--n-predict", "--prompt", "--model"})
    CHECK(r.out.find(opt) != std::string::npos);
  CHECK(run_cli("nonsense").code != 0);
  CHECK(run_cli("run --no-such-option").code != 0);
}

TEST_CASE("cli: brisk run prints exactly the prompt and the text on stdout", "[cli]") {
  BRISK_TEST_FILE(model, "models/stories260K.gguf");
  BRISK_TEST_FILE(ref, "models/reference/stories260K.greedy256.run_c.txt");
  Result r = run_cli("run -m " + model + " -p \"\" -n 256 --temp 0");
  REQUIRE(r.code == 0);
  auto rstrip = [](std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
  };
  CHECK(rstrip(r.out) == rstrip(slurp(ref)));
  CHECK(r.err.find("tokens/s") != std::string::npos);
  r = run_cli("run -m " + model + " -p \"Tom and Sue went to the\" -n 20 --temp 0");
  REQUIRE(r.code == 0);
  CHECK(r.out.rfind("Tom and Sue went to the", 0) == 0);
}

TEST_CASE("cli: bad model files give one clear error and a non-zero exit", "[cli]") {
  BRISK_TEST_FILE(model, "models/stories260K.gguf");
  const std::string dir = brisk::test::scratch_dir().string();
  const std::string good = slurp(model);
  struct Case {
    std::string name, bytes, needle;
  };
  std::string flipped_count = good;
  flipped_count[15] = 0x40;  // tensor count's high byte
  std::string past_end = good.substr(0, good.size() / 2);
  std::vector<Case> cases = {
      {"truncated.gguf", good.substr(0, 5000), "truncated"},
      {"zero.gguf", "", "empty file"},
      {"flipped.gguf", flipped_count, "claims"},
      {"half.gguf", past_end, "outside the file"},
      {"text.gguf", "not a model at all", "not a GGUF file"},
  };
  for (const Case& c : cases) {
    write(dir + "/" + c.name, c.bytes);
    Result r = run_cli("run -m " + dir + "/" + c.name + " -p hi -n 4");
    INFO(c.name << ": " << r.err);
    CHECK(r.code == 1);
    CHECK(r.err.find(c.needle) != std::string::npos);
    CHECK(r.out.empty());
  }
  Result r = run_cli("run -m " + dir + "/missing.gguf -p hi");
  CHECK(r.code == 1);
  CHECK(r.err.find("cannot open") != std::string::npos);
  r = run_cli("run -m " + dir + " -p hi");
  CHECK(r.code == 1);
  CHECK(r.err.find("directory") != std::string::npos);
}

TEST_CASE("cli: a prompt longer than the context is a clear error", "[cli]") {
  BRISK_TEST_FILE(model, "models/stories260K.gguf");
  Result r = run_cli("run -m " + model + " -c 8 -p \"one two three four five six seven eight nine ten\" -n 4");
  CHECK(r.code == 1);
  CHECK(r.err.find("do not fit") != std::string::npos);
}

TEST_CASE("cli: tokenize --ids prints one JSON array", "[cli]") {
  BRISK_TEST_FILE(model, "models/stories260K.gguf");
  Result r = run_cli("tokenize -m " + model + " -p \"Once upon\" --ids");
  CHECK(r.code == 0);
  CHECK(r.out == "[1, 403, 407]\n");
}

TEST_CASE("cli: bench --interleave runs every parallel count with every cache type pair", "[cli]") {
  BRISK_TEST_FILE(model, "models/stories260K.gguf");
  Result r = run_cli("bench -m " + model +
                     " --prompt-tokens 8 -n 6 --window 3 -r 2 --parallel 1,2 --cache-type-k f16,f32 --cache-type-v "
                     "f16,f32 --interleave --json --no-history --bandwidth-mib 0");
  INFO(r.err);
  REQUIRE(r.code == 0);
  // One JSON line per configuration, cache types outer, counts inner.
  const char* want[][2] = {{"\"parallel\":1", "f16"}, {"\"parallel\":2", "f16"}, {"\"parallel\":1", "f32"},
                           {"\"parallel\":2", "f32"}};
  size_t pos = 0;
  for (auto& w : want) {
    const size_t eol = r.out.find('\n', pos);
    REQUIRE(eol != std::string::npos);
    const std::string line = r.out.substr(pos, eol - pos);
    CHECK(line.find(w[0]) != std::string::npos);
    CHECK(line.find(std::string("\"cache_type_k\":\"") + w[1] + "\"") != std::string::npos);
    CHECK(line.find("\"interleaved\":true") != std::string::npos);
    pos = eol + 1;
  }
  CHECK(pos == r.out.size());

  Result bad = run_cli("bench -m " + model + " --cache-type-k f16,f32 --cache-type-v f16,f32,f16 --no-history");
  CHECK(bad.code == 2);
  CHECK(bad.err.find("as many as --cache-type-k") != std::string::npos);
}

TEST_CASE("cli: bench's bw use pairs each repetition with the bandwidth measured around it", "[cli]") {
  BRISK_TEST_FILE(model, "models/stories260K.gguf");
  Result r = run_cli("bench -m " + model + " --prompt-tokens 8 -n 16 --window 8 -r 3 --json --no-history --bandwidth-mib 8");
  INFO(r.err);
  REQUIRE(r.code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  std::vector<double> tg = j.at("gen_tokens_per_s_each"), bw = j.at("read_bandwidth_gbs_each");
  const std::vector<double> before = j.at("read_bandwidth_gbs_before_each"),
                            after = j.at("read_bandwidth_gbs_after_each");
  const std::vector<double> each = j.at("bandwidth_use_each");
  REQUIRE(tg.size() == 3);
  REQUIRE(bw.size() == 3);
  REQUIRE(before.size() == 3);
  REQUIRE(after.size() == 3);
  REQUIRE(each.size() == 3);
  const double bytes = j.at("model_bytes");
  std::vector<double> uses, steady;
  for (int i = 0; i < 3; ++i) {
    CHECK(before[i] > 0);
    CHECK(after[i] > 0);
    CHECK(bw[i] == Approx(0.5 * (before[i] + after[i])));
    uses.push_back(tg[i] / (bw[i] * 1e9 / bytes));  // steps/s over the ceiling around repetition i
    CHECK(each[i] == Approx(uses[i]));
    // Steady: the readings around the repetition agree within 15%.
    if (std::abs(before[i] - after[i]) <= 0.15 * bw[i]) steady.push_back(uses[i]);
  }
  CHECK(j.at("bandwidth_use_steady_reps").get<size_t>() == steady.size());
  // The reported use is the median of the steady repetitions (of all, if none is).
  std::vector<double>& over = steady.empty() ? uses : steady;
  std::sort(over.begin(), over.end());
  const double want = over.size() % 2 ? over[over.size() / 2]
                                      : 0.5 * (over[over.size() / 2 - 1] + over[over.size() / 2]);
  CHECK(j.at("bandwidth_use").get<double>() == Approx(want));
  std::sort(tg.begin(), tg.end());
  CHECK(j.at("gen_tokens_per_s").get<double>() == Approx(tg[1]));
}
