// SPDX-License-Identifier: MIT
// `brisk batch` as a user runs it: greedy records equal `brisk run`, bad
// records become error lines, a run killed at random points resumes to the
// very bytes of an uninterrupted one, shards merge to the straight run.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_util.h"
#include "test_data.h"

using Result = brisk::test::CliResult;
using brisk::test::read_bytes;
using brisk::test::run_cli;
using brisk::test::write_bytes;

namespace {

std::string dir() { return brisk::test::scratch_dir().string(); }

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

void remove_output(const std::string& out) {
  std::remove(out.c_str());
  std::remove((out + ".batch.json").c_str());
}

std::vector<nlohmann::json> lines_of(const std::string& path) {
  std::vector<nlohmann::json> v;
  std::istringstream in(read_bytes(path));
  std::string line;
  while (std::getline(in, line)) v.push_back(nlohmann::json::parse(line));
  return v;
}

// Log-summary style records: a shared instruction, then a varying log line.
std::string make_input(int n) {
  static const char* logs[] = {"Once upon a time there was a little dog", "The sun was shining and Lily",
                               "Tom wanted to play with his ball", "One day a bird flew over the tree",
                               "The cat sat on the mat and"};
  std::string s;
  for (int i = 0; i < n; ++i) {
    nlohmann::json j;
    j["id"] = "rec-" + std::to_string(i);
    j["prompt"] = std::string("Once upon a time, in a small town, there lived a girl. ") + logs[i % 5];
    if (i % 7 == 3) j["max_tokens"] = 5;
    s += j.dump() + "\n";
  }
  return s;
}

}  // namespace

TEST_CASE("batch: greedy records equal brisk run on the same prompt", "[batch]") {
  BRISK_TEST_FILE(model, "models/stories260K.gguf");
  const std::vector<std::string> prompts = {"Once upon a time", "Tom and Sue went to the", "The little bird"};
  std::string in;
  for (size_t i = 0; i < prompts.size(); ++i)
    in += nlohmann::json({{"id", i}, {"prompt", prompts[i]}}).dump() + "\n";
  write_bytes(dir() + "/g.jsonl", in);
  const std::string out = dir() + "/g.out.jsonl";
  remove_output(out);
  Result r = run_cli("batch -m " + model + " -i " + dir() + "/g.jsonl -o " + out + " -n 40 --temp 0 --parallel 3");
  REQUIRE(r.code == 0);
  const auto lines = lines_of(out);
  REQUIRE(lines.size() == prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    CHECK(lines[i]["index"] == i);
    CHECK(lines[i]["id"] == i);
    Result run = run_cli("run -m " + model + " -p " + quote(prompts[i]) + " -n 40 --temp 0");
    REQUIRE(run.code == 0);
    CHECK(run.out == prompts[i] + lines[i]["text"].get<std::string>() + "\n");
    CHECK(lines[i]["completion_tokens"].get<int>() > 0);
    CHECK(lines[i]["prompt_tokens"].get<int>() > 0);
  }
}

TEST_CASE("batch: bad records become error lines and the run goes on", "[batch]") {
  BRISK_TEST_FILE(model, "models/stories260K.gguf");
  std::string long_prompt;
  for (int i = 0; i < 100; ++i) long_prompt += "the dog ran and ";
  const std::string in = "{\"id\":1,\"prompt\":\"Once upon a time\"}\n"
                         "{\"id\":2,\"prompt\":\"unterminated\n"
                         "\n"
                         "{\"prompt\":\"no id\"}\n"
                         "{\"id\":4,\"prompt\":\"a\",\"messages\":[]}\n"
                         "{\"id\":5,\"prompt\":\"" + long_prompt + "\"}\n"
                         "{\"id\":6,\"prompt\":\"x\",\"max_tokens\":-3}\n"
                         "[1,2,3]\n"
                         "{\"id\":\"last\",\"prompt\":\"The cat\",\"stop\":[\".\"]}\n";
  write_bytes(dir() + "/bad.jsonl", in);
  const std::string out = dir() + "/bad.out.jsonl";
  remove_output(out);
  Result r = run_cli("batch -m " + model + " -i " + dir() + "/bad.jsonl -o " + out + " -n 30 --temp 0 -c 128");
  REQUIRE(r.code == 0);
  const auto lines = lines_of(out);
  REQUIRE(lines.size() == 8);  // the blank line is not a record
  CHECK(lines[0].contains("text"));
  CHECK(lines[1]["error"].get<std::string>().find("not valid JSON") != std::string::npos);
  CHECK(lines[2]["error"].get<std::string>().find("id") != std::string::npos);
  CHECK(lines[3]["error"].get<std::string>().find("either") != std::string::npos);
  CHECK(lines[4]["error"].get<std::string>().find("too long") != std::string::npos);
  CHECK(lines[5]["error"].get<std::string>().find("max_tokens") != std::string::npos);
  CHECK(lines[6]["error"].get<std::string>().find("object") != std::string::npos);
  CHECK(lines[7]["id"] == "last");
  CHECK(lines[7]["text"].get<std::string>().find('.') == std::string::npos);
  for (size_t i = 0; i < lines.size(); ++i) CHECK(lines[i]["index"] == i);
  CHECK(r.err.find("errors") != std::string::npos);
}

TEST_CASE("batch: killed at random points, the resumed output is byte-identical", "[batch]") {
  BRISK_TEST_FILE(model, "models/stories260K.gguf");
  write_bytes(dir() + "/k.jsonl", make_input(60));
  const std::string args = " -m " + model + " -i " + dir() + "/k.jsonl -n 48 --temp 0 --parallel 4 -t 1";
  const std::string straight = dir() + "/k.straight.jsonl";
  remove_output(straight);
  const auto t0 = std::chrono::steady_clock::now();
  REQUIRE(run_cli("batch" + args + " -o " + straight).code == 0);
  // Kill points fall in the first third of the time a whole run takes here, so
  // that an idle fast machine is interrupted as surely as a loaded slow one.
  const int run_ms = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count());
  const std::string want = read_bytes(straight);
  REQUIRE(lines_of(straight).size() == 60);

  const std::string out = dir() + "/k.killed.jsonl";
  remove_output(out);
  const char* bin = std::getenv("BRISK_BIN");
  std::mt19937 rng(12345);
  int kills = 0;
  for (int attempt = 0; attempt < 40; ++attempt) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      const std::string cmd = std::string(bin) + " batch" + args + " -o " + out + " 2>/dev/null";
      ::execl("/bin/sh", "sh", "-c", ("exec " + cmd).c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(1, std::max(2, run_ms / 3))(rng)));
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      ++kills;
      // A torn write now and then: half a record left at the end.
      if (attempt % 3 == 1) std::ofstream(out, std::ios::app) << "{\"index\":9999,\"id\":\"half";
      continue;
    }
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    break;
  }
  CHECK(kills > 0);
  Result r = run_cli("batch" + args + " -o " + out);  // finishes whatever is left (or nothing)
  REQUIRE(r.code == 0);
  CHECK(read_bytes(out) == want);
}

TEST_CASE("batch: a resumed run with other options or another model is refused", "[batch]") {
  BRISK_TEST_FILE(model, "models/stories260K.gguf");
  BRISK_TEST_FILE(other, "models/stories260K-q8_0.gguf");
  write_bytes(dir() + "/o.jsonl", make_input(4));
  const std::string out = dir() + "/o.out.jsonl";
  remove_output(out);
  const std::string base = "batch -i " + dir() + "/o.jsonl -o " + out + " -n 8";
  REQUIRE(run_cli(base + " -m " + model + " --temp 0").code == 0);
  Result r = run_cli(base + " -m " + model + " --temp 0.5");
  CHECK(r.code != 0);
  CHECK(r.err.find("temperature") != std::string::npos);
  r = run_cli(base + " -m " + other + " --temp 0");
  CHECK(r.code != 0);
  CHECK(r.err.find("model_identity") != std::string::npos);
  // The same command again is fine: nothing left to do.
  CHECK(run_cli(base + " -m " + model + " --temp 0").code == 0);
  // A foreign file is never appended to.
  write_bytes(dir() + "/foreign.jsonl", "not mine\n");
  std::remove((dir() + "/foreign.jsonl.batch.json").c_str());
  r = run_cli("batch -i " + dir() + "/o.jsonl -o " + dir() + "/foreign.jsonl -m " + model);
  CHECK(r.code != 0);
  CHECK(read_bytes(dir() + "/foreign.jsonl") == "not mine\n");
}

TEST_CASE("batch: three shards merged equal the straight run, gaps and duplicates are refused", "[batch]") {
  BRISK_TEST_FILE(model, "models/stories260K.gguf");
  write_bytes(dir() + "/s.jsonl", make_input(20) + "{bad json\n");
  const std::string args = " -m " + model + " -i " + dir() + "/s.jsonl -n 16 --temp 0";
  const std::string straight = dir() + "/s.straight.jsonl";
  remove_output(straight);
  REQUIRE(run_cli("batch" + args + " -o " + straight).code == 0);
  std::string shards;
  for (int k = 0; k < 3; ++k) {
    const std::string o = dir() + "/s.shard" + std::to_string(k) + ".jsonl";
    remove_output(o);
    REQUIRE(run_cli("batch" + args + " --shard " + std::to_string(k) + "/3 -o " + o).code == 0);
    shards += " " + o;
  }
  const std::string merged = dir() + "/s.merged.jsonl";
  Result r = run_cli("batch --merge " + merged + shards);
  REQUIRE(r.code == 0);
  CHECK(read_bytes(merged) == read_bytes(straight));
  // A missing shard is a gap, a shard given twice a duplicate.
  r = run_cli("batch --merge " + dir() + "/s.bad.jsonl " + dir() + "/s.shard0.jsonl " + dir() + "/s.shard1.jsonl");
  CHECK(r.code != 0);
  r = run_cli("batch --merge " + dir() + "/s.bad.jsonl" + shards + " " + dir() + "/s.shard1.jsonl");
  CHECK(r.code != 0);
  CHECK(r.err.find("twice") != std::string::npos);
  CHECK(run_cli("batch" + args + " --shard 3/3 -o " + dir() + "/x.jsonl").code == 2);
}

TEST_CASE("batch: records sharing an instruction reuse its KV and give the same text", "[batch]") {
  BRISK_TEST_FILE(model, "models/stories260K.gguf");
  write_bytes(dir() + "/p.jsonl", make_input(12));
  const std::string args = " -m " + model + " -i " + dir() + "/p.jsonl -n 24 --temp 0 --parallel 4 --json";
  const std::string shared = dir() + "/p.shared.jsonl", plain = dir() + "/p.plain.jsonl";
  remove_output(shared);
  remove_output(plain);
  Result r = run_cli("batch" + args + " -o " + shared);
  REQUIRE(r.code == 0);
  const nlohmann::json summary = nlohmann::json::parse(r.out);
  CHECK(summary["shared_prefix_tokens"].get<int>() > 0);
  CHECK(summary["records"] == 12);
  r = run_cli("batch" + args + " --prefix-min 0 -o " + plain);
  REQUIRE(r.code == 0);
  CHECK(nlohmann::json::parse(r.out)["shared_prefix_tokens"] == 0);
  CHECK(read_bytes(shared) == read_bytes(plain));
}

TEST_CASE("batch: an instruction shared by all records is read once, longer prefixes grow from it", "[batch]") {
  BRISK_TEST_FILE(model, "models/stories260K.gguf");
  const std::string instruction = "Once upon a time, in a small town by the sea, there lived a girl who liked to read.";
  static const char* days[] = {" On Monday", " On Friday", " On Sunday"};
  static const char* tails[] = {" she ran.", " a dog barked.", " it rained.", " Tom sang.",
                                " the cat slept.", " birds flew.", " we ate cake.", " Lily laughed."};
  std::string input;
  for (int i = 0; i < 24; ++i) {  // three groups of eight sharing a day
    nlohmann::json j;
    j["id"] = i;
    j["prompt"] = instruction + days[i / 8] + tails[i % 8];
    input += j.dump() + "\n";
  }
  write_bytes(dir() + "/t.jsonl", input);
  Result r = run_cli("tokenize --ids -m " + model + " -p " + quote(instruction));
  REQUIRE(r.code == 0);
  const size_t n_instruction = nlohmann::json::parse(r.out).size();
  REQUIRE(n_instruction > 20);

  const std::string args = " -m " + model + " -i " + dir() + "/t.jsonl -n 8 --temp 0 --parallel 4 --json";
  const std::string shared = dir() + "/t.shared.jsonl", plain = dir() + "/t.plain.jsonl";
  remove_output(shared);
  remove_output(plain);
  r = run_cli("batch" + args + " -o " + shared);
  REQUIRE(r.code == 0);
  const nlohmann::json s = nlohmann::json::parse(r.out);
  r = run_cli("batch" + args + " --prefix-min 0 -o " + plain);
  REQUIRE(r.code == 0);
  const nlohmann::json p = nlohmann::json::parse(r.out);
  CHECK(read_bytes(shared) == read_bytes(plain));
  // Each record's tokens are counted once, read or forked.
  CHECK(s["prompt_tokens"].get<size_t>() + s["shared_prefix_tokens"].get<size_t>() == p["prompt_tokens"].get<size_t>());
  // The instruction is read once, and each day's few tokens once per group;
  // reading it again for every day's prefix would pass 2 * n_instruction.
  const size_t prefix_read = s["prefix_tokens_read"].get<size_t>();
  CHECK(prefix_read + 1 >= n_instruction);  // its last token may merge with what follows
  CHECK(prefix_read < 2 * n_instruction);
  // Every record forks at least the instruction.
  CHECK(s["shared_prefix_tokens"].get<size_t>() >= 24 * (n_instruction - 1));
}

TEST_CASE("run --prompt-cache: saved when missing, reused in another process, refused for another model", "[state]") {
  BRISK_TEST_FILE(model, "models/stories260K.gguf");
  BRISK_TEST_FILE(other, "models/stories260K-q8_0.gguf");
  const std::string cache = dir() + "/prompt.state";
  std::remove(cache.c_str());
  const std::string prompt = quote("Once upon a time, in a small town, there lived a girl named Lily. She liked to");
  const std::string args = "run -m " + model + " -p " + prompt + " -n 30 --temp 0 -t 1";
  Result plain = run_cli(args);
  REQUIRE(plain.code == 0);
  Result first = run_cli(args + " --prompt-cache " + cache);
  REQUIRE(first.code == 0);
  CHECK(first.err.find("saved") != std::string::npos);
  Result second = run_cli(args + " --prompt-cache " + cache);
  REQUIRE(second.code == 0);
  CHECK(second.err.find("reused") != std::string::npos);
  CHECK(first.out == plain.out);
  CHECK(second.out == plain.out);
  // A longer prompt reuses the saved part and continues as if computed afresh.
  const std::string longer = quote("Once upon a time, in a small town, there lived a girl named Lily. She liked to play");
  Result ext = run_cli("run -m " + model + " -p " + longer + " -n 30 --temp 0 -t 1 --prompt-cache " + cache);
  REQUIRE(ext.code == 0);
  CHECK(ext.out == run_cli("run -m " + model + " -p " + longer + " -n 30 --temp 0 -t 1").out);
  Result wrong = run_cli("run -m " + other + " -p " + prompt + " -n 30 --temp 0 --prompt-cache " + cache);
  CHECK(wrong.code != 0);
  CHECK(wrong.err.find("another model") != std::string::npos);
  CHECK(wrong.out.empty());
}

TEST_CASE("doctor: the command reads a fake root and prints JSON", "[doctor]") {
  const std::string root = dir() + "/doctor-cli";
  std::filesystem::create_directories(root + "/proc");
  write_bytes(root + "/proc/meminfo", "MemTotal: 1000 kB\nMemAvailable: 500 kB\nSwapTotal: 100 kB\nSwapFree: 50 kB\n");
  Result r = run_cli("doctor --root " + root + " --files-only --json");
  REQUIRE(r.code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  bool swap_warned = false;
  for (const auto& c : j["checks"]) swap_warned |= c["check"] == "swap" && c["status"] == "warn";
  CHECK(swap_warned);
  r = run_cli("doctor --root " + root + " --files-only");
  CHECK(r.out.find("[WARN] swap") != std::string::npos);
  CHECK(run_cli("doctor --duration -1").code == 2);
}

TEST_CASE("batch: chat records go through the chat template, with the system prompt", "[batch]") {
  BRISK_TEST_FILE(model, "models/stories260K.gguf");
  write_bytes(dir() + "/c.jsonl",
        "{\"id\":\"c1\",\"messages\":[{\"role\":\"user\",\"content\":\"Tell me a story\"}],\"max_tokens\":6}\n"
        "{\"id\":\"c2\",\"prompt\":\"A story\",\"system\":\"You tell stories\",\"max_tokens\":6}\n"
        "{\"id\":\"c3\",\"messages\":[{\"role\":\"user\"}]}\n");
  const std::string out = dir() + "/c.out.jsonl";
  remove_output(out);
  // stories260K has no template of its own: without one named, each chat record fails alone.
  REQUIRE(run_cli("batch -m " + model + " -i " + dir() + "/c.jsonl -o " + out + " --temp 0").code == 0);
  auto lines = lines_of(out);
  REQUIRE(lines.size() == 3);
  CHECK(lines[0]["error"].get<std::string>().find("chat template") != std::string::npos);
  remove_output(out);
  REQUIRE(run_cli("batch -m " + model + " -i " + dir() + "/c.jsonl -o " + out + " --temp 0 --chat-template llama2")
              .code == 0);
  lines = lines_of(out);
  REQUIRE(lines.size() == 3);
  CHECK(lines[0]["completion_tokens"] == 6);
  // [INST] <<SYS>> ... adds the system prompt's tokens to the second record's prompt.
  CHECK(lines[1]["prompt_tokens"].get<int>() > lines[0]["prompt_tokens"].get<int>());
  CHECK(lines[2]["error"].get<std::string>().find("role") != std::string::npos);
}
