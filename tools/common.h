// SPDX-License-Identifier: MIT
// Helpers shared by the subcommands: the options every command spells the
// same way, error reporting, JSON output and timing. (Progress and Ctrl-C:
// progress.h.)
#pragma once
#include <chrono>
#include <cstdio>
#include <cxxopts.hpp>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "brisk/brisk.h"

namespace brisk::tools {

// Prints "brisk CMD: error: <last error>" and returns exit code 1.
inline int report(const char* cmd, brisk_status st) {
  std::fprintf(stderr, "brisk %s: error: %s (%s)\n", cmd, brisk_last_error(), brisk_status_name(st));
  return 1;
}

inline double now_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// Parses a type name ("f16", "q8_0", ...; "auto" gives BRISK_TYPE_AUTO).
// Returns false for unknown names.
bool parse_type(const std::string& name, int32_t* out);

// The name of a brisk_type value ("q4_k"); "?" for ids the table lacks.
const char* type_name(int32_t type);

// "3.4M", "3558880", "512K", "1.5G" -> bytes (K = 1024). Returns false if malformed.
bool parse_size(const std::string& text, uint64_t* out);

// Reads a whole file; returns false (and prints why) on failure.
bool read_file(const char* cmd, const std::string& path, std::string* out);

// ---- the convention every command follows (see 'brisk --help') ----------
// -m/--model FILE: the input model. what: e.g. "model (GGUF)".
void add_model_option(cxxopts::Options& opts, const std::string& what);
// The same, also taken as the first positional argument (commands that took
// the model positionally before -m existed keep accepting it that way).
void add_model_option_positional(cxxopts::Options& opts, const std::string& what);
// -o/--output FILE.
void add_output_option(cxxopts::Options& opts, const std::string& what);
// -t/--threads N: worker threads, 0 (default) = one per physical core.
void add_threads_option(cxxopts::Options& opts);
// --json: results as JSON. where: e.g. "on stdout".
void add_json_option(cxxopts::Options& opts, const std::string& where = "on stdout instead of the text");

// Adds -h/--help and parses argv (argv[0] is the command's name). Returns true
// when the command should go on. Otherwise *exit_code is 0 after --help
// (printed to stdout), or 2 after one error line on stderr for an unknown
// option, a bad value, an unexpected argument or a negative --threads.
bool parse_command(const char* cmd, cxxopts::Options& opts, int argc, char** argv, cxxopts::ParseResult* args,
                   int* exit_code);

// Prints "brisk CMD: error: MESSAGE (see 'brisk CMD --help')" and returns 2,
// the exit code of every usage error.
int usage_error(const char* cmd, const std::string& message);

// The model given with -m/--model, or under an older name (`alias`: the
// positional argument, -i/--input, ...). Empty if none; false (after
// printing why) if two different ones are given.
bool model_arg(const char* cmd, const cxxopts::ParseResult& args, std::string* model, const char* alias = nullptr);

// -t as given: for library calls whose n_threads = 0 means one per physical
// core (sessions, engines, ppl, compare, calibrate).
uint32_t threads_arg(const cxxopts::ParseResult& args);
// -t with 0 made brisk_physical_cores(): for library calls whose n_threads = 0
// means all logical CPUs (synthesize, convert, verify, pack, quantize), so
// that -t means the same in every command.
uint32_t threads_arg_resolved(const cxxopts::ParseResult& args);

// --temp, --top-k, --top-p, --min-p, --repeat-penalty, --repeat-last-n with
// brisk_sampler_options' defaults; sampling_arg copies them into *out.
void add_sampling_options(cxxopts::Options& opts);
void sampling_arg(const cxxopts::ParseResult& args, brisk_sampler_options* out);

// Writes one JSON document and a newline (invalid UTF-8 in strings, such as a
// partial token piece, becomes U+FFFD instead of an exception).
void print_json(FILE* out, const nlohmann::json& j);

// The model's kernel plan as text (brisk_model_kernel_plan); "" with the
// status in *st (if given) when it cannot be read.
std::string kernel_plan_text(const brisk_model* model, brisk_status* st = nullptr);

// Size of a file in bytes; 0 if it cannot be read.
uint64_t file_bytes(const std::string& path);

}  // namespace brisk::tools
