// SPDX-License-Identifier: MIT
// Loading options in every command (issue 31): --mlock and --no-mmap
// wherever a model file is read, --plan and --plan-cache wherever a model
// is run. A copy read into memory gives byte-identical outputs; a lock the
// OS refuses is one clear error naming RLIMIT_MEMLOCK, and no output.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_util.h"
#include "memlock_util.h"
#include "test_data.h"

using Result = brisk::test::CliResult;
using brisk::test::cli_command;
using brisk::test::cli_result;
using brisk::test::read_bytes;
using brisk::test::run_cli;

namespace {

bool has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

std::string dir() { return brisk::test::scratch_dir().string(); }

// `brisk ARGS` where no page can be locked; code kCannotDropLock if this
// machine does not let the test give up CAP_IPC_LOCK.
Result run_cli_low_memlock(const std::string& args) {
  const std::string cmd = cli_command(args);
  const int code = brisk::test::with_low_memlock([&] {
    return brisk::test::exit_code(std::system(cmd.c_str()));
  });
  return cli_result(code);
}

const std::vector<std::string> kRunning = {"run", "bench", "ppl", "compare", "serve", "batch"};
const std::vector<std::string> kReading = {"quantize", "calibrate", "verify", "convert", "pack"};

}  // namespace

TEST_CASE("load options: every command that reads a model takes --mlock and --no-mmap, every one that runs it --plan",
          "[cli][load]") {
  for (const std::string& cmd : kRunning) {
    INFO("brisk " << cmd << " --help");
    const Result r = run_cli(cmd + " --help");
    REQUIRE(r.code == 0);
    for (const char* opt : {"--mlock", "--no-mmap", "--plan", "--plan-cache"}) CHECK(has(r.out, opt));
  }
  for (const std::string& cmd : kReading) {
    INFO("brisk " << cmd << " --help");
    const Result r = run_cli(cmd + " --help");
    REQUIRE(r.code == 0);
    CHECK(has(r.out, "--mlock"));
    CHECK(has(r.out, "--no-mmap"));
    CHECK(has(r.out, "RLIMIT_MEMLOCK"));
    CHECK_FALSE(has(r.out, "--plan"));  // nothing they do runs on a measured kernel plan
  }
  // tune always measures: its plan is not chosen, only where it is cached.
  const Result tune = run_cli("tune --help");
  for (const char* opt : {"--mlock", "--no-mmap", "--plan-cache"}) CHECK(has(tune.out, opt));
  CHECK_FALSE(has(tune.out, "--plan "));
  CHECK_FALSE(has(run_cli("unpack --help").out, "--no-mmap"));  // a bundle is streamed
  // A bad plan is a usage error before anything is loaded.
  for (const char* args : {"serve -m nowhere.gguf --plan sometimes", "batch -m nowhere.gguf -i in.jsonl -o out.jsonl --plan sometimes"}) {
    INFO(args);
    const Result r = run_cli(args);
    CHECK(r.code == 2);
    CHECK(has(r.err, "--plan must be auto, fixed or measure"));
  }
}

TEST_CASE("load options: a model read into memory gives byte-identical outputs", "[cli][load]") {
  BRISK_TEST_FILE(model, "models/stories260K.gguf");
  BRISK_TEST_FILE(model_bin, "models/stories260K.bin");
  BRISK_TEST_FILE(tok, "models/tok512.bin");
  BRISK_TEST_FILE(text, "data/tinystories-valid-head.txt");
  const std::string d = dir();
  auto made = [&](const std::string& args, const std::string& out) {
    INFO("brisk " << args);
    const Result r = run_cli(args);
    INFO(r.err);
    REQUIRE(r.code == 0);
    return read_bytes(out);
  };

  // quantize: mapped, read into memory, and locked.
  const std::string q = made("quantize -m " + model + " -o " + d + "/q.gguf --type q4_k_m -q", d + "/q.gguf");
  REQUIRE(!q.empty());
  CHECK(made("quantize --no-mmap -m " + model + " -o " + d + "/qn.gguf --type q4_k_m -q", d + "/qn.gguf") == q);
  CHECK(made("quantize --mlock -m " + model + " -o " + d + "/ql.gguf --type q4_k_m -q", d + "/ql.gguf") == q);

  // convert: the source hash is taken after the tensors were read (a copy
  // in memory must still hold them), and llama2.c's classifier is read twice.
  const std::string src = " -m " + model_bin + " --tokenizer " + tok + " -o ";
  const std::string c = made("convert" + src + d + "/c.gguf", d + "/c.gguf");
  CHECK(made("convert --no-mmap" + src + d + "/cn.gguf", d + "/cn.gguf") == c);

  // pack compresses what its checksum pass read before.
  const std::string p = made("pack -t 1 -m " + d + "/c.gguf -o " + d + "/p.brisk", d + "/p.brisk");
  CHECK(made("pack -t 1 --no-mmap -m " + d + "/c.gguf -o " + d + "/pn.brisk", d + "/pn.brisk") == p);

  // verify: a good file, a damaged one (the same mismatch named), a manifest added.
  Result r = run_cli("verify --no-mmap --mlock -m " + d + "/c.gguf");
  CHECK(r.code == 0);
  CHECK(r.out == "OK " + d + "/c.gguf\n");
  std::string bad = c;
  bad[bad.size() - 10] ^= 1;
  std::ofstream(d + "/bad.gguf", std::ios::binary).write(bad.data(), static_cast<std::streamsize>(bad.size()));
  const Result mapped = run_cli("verify -m " + d + "/bad.gguf");
  r = run_cli("verify --no-mmap -m " + d + "/bad.gguf");
  CHECK(mapped.code == 1);
  CHECK(r.code == 1);
  CHECK(r.out == mapped.out);
  const std::string m = made("verify --add-manifest -m " + d + "/q.gguf -o " + d + "/m.gguf", d + "/m.gguf");
  CHECK(made("verify --add-manifest --no-mmap -m " + d + "/q.gguf -o " + d + "/mn.gguf", d + "/mn.gguf") == m);

  // calibrate runs the model it read.
  const std::string cal = " -m " + model + " --data " + text + " -c 64 --tokens 256 -o ";
  const std::string s = made("calibrate" + cal + d + "/s.gguf", d + "/s.gguf");
  CHECK(made("calibrate --no-mmap" + cal + d + "/sn.gguf", d + "/sn.gguf") == s);

  // batch: greedy records from a model read into memory, on the fixed plan.
  std::ofstream(d + "/in.jsonl") << "{\"id\":\"a\",\"prompt\":\"Once upon a time\"}\n"
                                 << "{\"id\":\"b\",\"prompt\":\"The cat\"}\n";
  const std::string batch = "batch -m " + model + " -i " + d + "/in.jsonl -n 12 --temp 0 --plan fixed -o ";
  const std::string b = made(batch + d + "/b.jsonl", d + "/b.jsonl");
  CHECK(made(batch + d + "/bn.jsonl --no-mmap --mlock", d + "/bn.jsonl") == b);
}

TEST_CASE("load options: a lock refused under RLIMIT_MEMLOCK is one clear error and leaves no output",
          "[cli][load]") {
  BRISK_TEST_FILE(model, "models/stories260K.gguf");
  BRISK_TEST_FILE(model_bin, "models/stories260K.bin");
  BRISK_TEST_FILE(tok, "models/tok512.bin");
  BRISK_TEST_FILE(text, "data/tinystories-valid-head.txt");
  const std::string d = dir();
  REQUIRE(run_cli("quantize -m " + model + " -o " + d + "/in.gguf --type q8_0 -q").code == 0);
  std::ofstream(d + "/in.jsonl") << "{\"id\":\"a\",\"prompt\":\"Once\"}\n";
  const struct {
    std::string args, out;
  } cases[] = {
      {"quantize --mlock -m " + model + " -q -o", d + "/refused-q.gguf"},
      {"quantize --mlock --no-mmap -m " + model + " -q -o", d + "/refused-qn.gguf"},
      {"convert --mlock -m " + model_bin + " --tokenizer " + tok + " -o", d + "/refused-c.gguf"},
      {"pack --mlock -m " + d + "/in.gguf -o", d + "/refused-p.brisk"},
      {"verify --mlock --add-manifest -m " + d + "/in.gguf -o", d + "/refused-m.gguf"},
      {"calibrate --mlock -m " + model + " --data " + text + " --tokens 256 -o", d + "/refused-s.gguf"},
      {"batch --mlock -m " + model + " -i " + d + "/in.jsonl -n 4 -o", d + "/refused-b.jsonl"},
  };
  for (const auto& c : cases) {
    INFO("brisk " << c.args << " " << c.out);
    const Result r = run_cli_low_memlock(c.args + " " + c.out);
    if (r.code == brisk::test::kCannotDropLock) {
      WARN("skipped: this process cannot give up CAP_IPC_LOCK, so a lock is never refused");
      return;
    }
    INFO(r.err);
    CHECK(r.code == 1);
    CHECK(has(r.err, "RLIMIT_MEMLOCK is 0.0 MiB"));
    CHECK(has(r.err, "error: "));
    CHECK_FALSE(std::filesystem::exists(c.out));
  }
  // verify without -o writes nothing; it must still fail, naming the limit.
  const Result r = run_cli_low_memlock("verify --mlock -m " + d + "/in.gguf");
  CHECK(r.code == 1);
  CHECK(has(r.err, "RLIMIT_MEMLOCK"));
}
