// SPDX-License-Identifier: MIT
// The `brisk` command as a user runs it: output, help, and one clear error
// with a non-zero exit for every kind of bad input.
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <catch2/catch.hpp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>
#include <vector>

#include "../tools/progress.h"
#include "cli_util.h"
#include "test_data.h"

using Result = brisk::test::CliResult;
using brisk::test::read_bytes;
using brisk::test::run_cli;
using brisk::test::write_bytes;

namespace {

// The commands `brisk --help` lists ("  NAME  summary" lines after "commands:").
std::vector<std::string> listed_commands() {
  const Result r = run_cli("--help");
  REQUIRE(r.code == 0);
  std::vector<std::string> names;
  std::istringstream in(r.out.substr(r.out.find("commands:\n") + 10));
  std::string line;
  while (std::getline(in, line) && line.rfind("  ", 0) == 0) {
    std::istringstream words(line);
    std::string name;
    words >> name;
    names.push_back(name);
  }
  return names;
}

size_t count_lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

bool has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

// Help text with every run of blanks and newlines made one space (cxxopts
// wraps descriptions at its own width).
std::string one_spaced(const std::string& s) {
  std::string o;
  for (char c : s) {
    const bool blank = c == ' ' || c == '\n';
    if (!(blank && !o.empty() && o.back() == ' ')) o += blank ? ' ' : c;
  }
  return o;
}

}  // namespace

TEST_CASE("cli: help is complete", "[cli]") {
  Result r = run_cli("--help");
  CHECK(r.code == 0);
  // The convention is documented once, here.
  for (const char* opt : {"-m, --model", "-o, --output", "-t, --threads", "--json", "one per physical core"})
    CHECK(has(r.out, opt));
  r = run_cli("run --help");
  CHECK(r.code == 0);
  for (const char* opt : {"--temp", "--top-k", "--top-p", "--min-p", "--repeat-penalty", "--seed", "--threads",
                          "--ctx-size", "--n-predict", "--prompt", "--model", "--json"})
    CHECK(has(r.out, opt));
  CHECK(run_cli("nonsense").code == 2);
  CHECK(run_cli("").code == 2);
  CHECK(run_cli("run --no-such-option").code == 2);
}

TEST_CASE("cli: every command's --help follows the convention", "[cli]") {
  const std::vector<std::string> cmds = listed_commands();
  // The enumeration finds today's commands (later ones are covered as they come).
  for (const char* c : {"run", "bench", "tokenize", "synth", "convert", "verify", "pack", "unpack", "quantize",
                        "calibrate", "compare", "ppl"})
    CHECK(std::find(cmds.begin(), cmds.end(), c) != cmds.end());
  // Commands that need not read a model; every other one takes -m/--model.
  const std::vector<std::string> modelless = {"synth", "doctor"};
  for (const std::string& cmd : cmds) {
    INFO("brisk " << cmd << " --help");
    Result r = run_cli(cmd + " --help");
    CHECK(r.code == 0);
    CHECK(r.err.empty());
    r.out = one_spaced(r.out);
    CHECK(has(r.out, "brisk " + cmd));
    CHECK(has(r.out, "-h, --help"));
    if (std::find(modelless.begin(), modelless.end(), cmd) == modelless.end()) CHECK(has(r.out, "-m, --model"));
    // -t, -o and --json: one spelling and, for -t, one meaning everywhere.
    if (has(r.out, "threads")) {
      CHECK(has(r.out, "-t, --threads N"));
      CHECK(has(r.out, "worker threads (0 = one per physical core)"));
    }
    if (has(r.out, "--output")) CHECK(has(r.out, "-o, --output FILE"));
    if (has(r.out, "--model")) CHECK((has(r.out, "-m, --model FILE") || has(r.out, "-m, --model arg")));
  }
}

TEST_CASE("cli: unknown options and bad values give one error line and exit 2", "[cli]") {
  for (const std::string& cmd : listed_commands()) {
    INFO("brisk " << cmd);
    Result r = run_cli(cmd + " --no-such-option");
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(count_lines(r.err) == 1);
    CHECK(r.err.rfind("brisk " + cmd + ": error: ", 0) == 0);
    CHECK(has(r.err, "no-such-option"));
    if (has(run_cli(cmd + " --help").out, "--threads")) {
      for (const char* bad : {"-t abc", "-t -1", "--threads 1.5"}) {
        INFO(bad);
        r = run_cli(cmd + " " + bad);
        CHECK(r.code == 2);
        CHECK(count_lines(r.err) == 1);
      }
    }
  }
  // Stray arguments are refused, not ignored.
  for (const char* args : {"run -m a.gguf stray", "verify a.gguf b.gguf", "pack a.gguf b.gguf -o c", "tokenize x -m a",
                           "quantize -m a.gguf -o b.gguf extra", "synth -o a.gguf extra", "ppl -m a -f b c"}) {
    INFO(args);
    const Result r = run_cli(args);
    CHECK(r.code == 2);
    CHECK(has(r.err, "unexpected argument"));
  }
  // Two different models under two spellings.
  const Result r = run_cli("verify a.gguf -m b.gguf");
  CHECK(r.code == 2);
  CHECK(has(r.err, "two models"));
}

TEST_CASE("cli: the progress display", "[cli]") {
  using brisk::tools::Progress;
  const std::string path = (brisk::test::scratch_dir() / "progress.txt").string();
  double now = 100;
  auto display = [&](bool terminal) {
    Progress::Display d;
    d.out = std::fopen(path.c_str(), "w");
    d.terminal = terminal;
    d.period = 10;
    d.clock = [&now] { return now; };
    d.width = 100;
    return d;
  };
  SECTION("plain lines: none for a short job, then one per period with an ETA") {
    Progress::Display d = display(false);
    {
      Progress p("chunks", d);
      p.update("ppl", 0, 10, "");
      now += 5;
      p.update("ppl", 5, 10, "");
      std::fflush(d.out);
      CHECK(read_bytes(path).empty());
      now += 6;  // 11 s since the start
      p.update("ppl", 6, 10, "");
      now += 1;
      p.update("ppl", 7, 10, "");  // within the period: nothing
      p.line("warning: w");
    }
    std::fclose(d.out);
    const std::string out = read_bytes(path);
    CHECK(out == "ppl:  60.0% (6/10 chunks), 0m11s so far, ETA 0m07s\nwarning: w\n");
  }
  SECTION("a terminal: a bar redrawn in place, erased at the end; a new stage restarts") {
    Progress::Display d = display(true);
    {
      Progress p("", d);
      p.update("pack", 0, 1000000, "header");
      now += 10;
      p.update("pack", 250000, 1000000, "blk.0");
      p.line("warning: w");
      now += 1;
      p.update("verify", 10, 100, "");
    }
    std::fclose(d.out);
    const std::string out = read_bytes(path);
    CHECK(has(out, "\r\033[Kpack [....................]   0.0%  header"));
    CHECK(has(out, "\r\033[Kpack [#####...............]  25.0%, ETA 0m30s  blk.0"));
    CHECK(has(out, "\r\033[Kwarning: w\n\r\033[Kpack [#####"));  // the line, then the bar again
    CHECK(has(out, "\r\033[Kverify [##..................]  10.0%"));
    CHECK(!has(out, "1000000"));  // no counts without units
    CHECK(out.size() >= 4);
    CHECK(out.substr(out.size() - 4) == "\r\033[K");  // erased at the end
  }
  SECTION("after Ctrl-C the callback cancels") {
    Progress::Display d = display(false);
    {
      Progress p("", d);
      CHECK(Progress::callback(&p, "x", 1, 2, "") == 0);
      brisk::tools::catch_sigint();
      std::raise(SIGINT);
      CHECK(Progress::callback(&p, "x", 1, 2, "") != 0);
      CHECK(brisk::tools::abort_requested(nullptr) != 0);
    }
    std::signal(SIGINT, SIG_DFL);
    brisk::tools::g_interrupted = 0;
    std::fclose(d.out);
  }
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
  CHECK(rstrip(r.out) == rstrip(read_bytes(ref)));
  CHECK(r.err.find("tokens/s") != std::string::npos);
  r = run_cli("run -m " + model + " -p \"Tom and Sue went to the\" -n 20 --temp 0");
  REQUIRE(r.code == 0);
  CHECK(r.out.rfind("Tom and Sue went to the", 0) == 0);
}

TEST_CASE("cli: bad model files give one clear error and a non-zero exit", "[cli]") {
  BRISK_TEST_FILE(model, "models/stories260K.gguf");
  const std::string dir = brisk::test::scratch_dir().string();
  const std::string good = read_bytes(model);
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
    write_bytes(dir + "/" + c.name, c.bytes);
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
  // The ceiling counts what a step reads, not the file (untied embeddings
  // are read a row per token).
  const double bytes = j.at("decode_bytes");
  CHECK(bytes > 0);
  CHECK(bytes < j.at("model_bytes").get<double>());
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

TEST_CASE("cli: --json results and the -m spelling of every model-reading command", "[cli]") {
  BRISK_TEST_FILE(model, "models/stories260K.gguf");
  BRISK_TEST_FILE(model_bin, "models/stories260K.bin");
  BRISK_TEST_FILE(tok, "models/tok512.bin");
  const std::string d = brisk::test::scratch_dir().string();
  auto json_of = [](const Result& r) {
    INFO(r.err);
    REQUIRE(r.code == 0);
    return nlohmann::json::parse(r.out);
  };

  // run: the text stays alone on stdout; the timings come as JSON, last on stderr.
  Result r = run_cli("run -m " + model + " -p \"Once upon\" -n 12 --temp 0 --ignore-eos --json");
  REQUIRE(r.code == 0);
  CHECK(r.out == run_cli("run -m " + model + " -p \"Once upon\" -n 12 --temp 0 --ignore-eos").out);
  std::string last = r.err.substr(0, r.err.size() - 1);
  last = last.substr(last.rfind('\n') + 1);
  nlohmann::json j = nlohmann::json::parse(last);
  CHECK(j.at("prompt_tokens") == 3);
  CHECK(j.at("gen_tokens") == 12);
  CHECK(j.at("stop_reason") == "max_tokens");
  CHECK(j.at("gen_tokens_per_s").get<double>() > 0);
  CHECK(run_cli("run -m " + model + " --chat --json").code == 2);

  // tokenize
  j = json_of(run_cli("tokenize -m " + model + " -p \"Once upon\" --json"));
  CHECK(j.at("n_tokens") == 3);
  CHECK(j.at("tokens").at(1).at("id") == 403);
  CHECK(j.at("tokens").at(0).at("piece") == "<s>");

  // convert (-m FILE --tokenizer: llama2.c; --from-llama2c still works), verify, pack, unpack.
  j = json_of(run_cli("convert -m " + model_bin + " --tokenizer " + tok + " -o " + d + "/j.gguf --json"));
  CHECK(j.at("format") == "llama2c");
  CHECK(j.at("file_bytes").get<uint64_t>() == read_bytes(d + "/j.gguf").size());
  CHECK(run_cli("convert --from-llama2c " + model_bin + " --tokenizer " + tok + " -o " + d + "/j2.gguf").code == 0);
  CHECK(read_bytes(d + "/j2.gguf") == read_bytes(d + "/j.gguf"));
  r = run_cli("convert -m " + model_bin + " -o " + d + "/j3.gguf");
  CHECK(r.code == 2);
  CHECK(has(r.err, "--tokenizer"));

  j = json_of(run_cli("verify -m " + d + "/j.gguf --json"));
  CHECK(j.at("status") == "ok");
  CHECK(j.at("bytes_checked").get<uint64_t>() > 0);
  CHECK(j.at("mismatches").empty());
  CHECK(run_cli("verify " + d + "/j.gguf").out == "OK " + d + "/j.gguf\n");  // the positional spelling

  j = json_of(run_cli("pack -m " + d + "/j.gguf -o " + d + "/j.brisk --json"));
  CHECK(j.at("gguf_bytes").get<uint64_t>() == read_bytes(d + "/j.gguf").size());
  CHECK(j.at("bundle_bytes").get<uint64_t>() == read_bytes(d + "/j.brisk").size());
  j = json_of(run_cli("unpack -m " + d + "/j.brisk -o " + d + "/j4.gguf --json"));
  CHECK(read_bytes(d + "/j4.gguf") == read_bytes(d + "/j.gguf"));
  // Progress went to a file: plain text, no terminal control.
  r = run_cli("pack " + d + "/j.gguf -o " + d + "/j2.brisk");
  CHECK(r.code == 0);
  CHECK(!has(r.err, "\r"));
  CHECK(!has(r.err, "\033"));

  std::string bytes = read_bytes(d + "/j.gguf");
  bytes[bytes.size() - 10] ^= 1;
  write_bytes(d + "/bad.gguf", bytes);
  r = run_cli("verify -m " + d + "/bad.gguf --json");
  CHECK(r.code == 1);
  j = nlohmann::json::parse(r.out);
  CHECK(j.at("status") == "failed");
  CHECK(j.at("mismatches").at(0).at("where") == "tensor 'blk.4.ffn_norm.weight'");

  // quantize: -m and the older -i give the same file; --json lists every tensor.
  j = json_of(run_cli("quantize -m " + model + " -o " + d + "/q.gguf --type q8_0 -q --json"));
  CHECK(j.at("file_bytes").get<uint64_t>() == read_bytes(d + "/q.gguf").size());
  CHECK(j.at("tensors").size() > 10);
  CHECK(j.at("tensors").at(0).contains("to"));
  CHECK(run_cli("quantize -i " + model + " -o " + d + "/q2.gguf --type q8_0 -q").code == 0);
  CHECK(read_bytes(d + "/q2.gguf") == read_bytes(d + "/q.gguf"));

  // synth
  j = json_of(run_cli("synth --shape tiny --type q8_0 -o " + d + "/s.gguf --json"));
  CHECK(j.at("shape") == "tiny");
  CHECK(j.at("file_bytes").get<uint64_t>() == read_bytes(d + "/s.gguf").size());
}

TEST_CASE("cli: brisk_physical_cores is what -t 0 gives an engine", "[cli]") {
  BRISK_TEST_FILE(model, "models/stories260K.gguf");
  CHECK(brisk_physical_cores() >= 1);
  const Result r = run_cli("bench -m " + model + " --prompt-tokens 4 -n 3 --window 1 -r 1 --json --no-history "
                           "--bandwidth-mib 0 -t 0");
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(nlohmann::json::parse(r.out).at("threads").get<uint32_t>() == brisk_physical_cores());
}
