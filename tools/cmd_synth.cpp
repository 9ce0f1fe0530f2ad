// SPDX-License-Identifier: MIT
// brisk synth: write a model with random weights in the shape of a real one.
#include <algorithm>
#include <cstdio>
#include <cxxopts.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "brisk/brisk.h"
#include "commands.h"
#include "common.h"

namespace brisk::tools {

int cmd_synth(int argc, char** argv) {
  char shapes[512] = "";
  size_t needed = 0;
  brisk_synthetic_shapes(shapes, sizeof shapes, &needed);
  cxxopts::Options opts("brisk synth",
                        "Write a GGUF model with random weights in the shape of a real model (no download).\n"
                        "Shapes: " + std::string(shapes));
  // clang-format off
  opts.add_options()
    ("shape", "model shape", cxxopts::value<std::string>()->default_value("tiny"))
    ("type", "weight type: f32, f16, bf16, q8_0, q4_0, q4_1, q4_k, q5_k, q6_k", cxxopts::value<std::string>()->default_value("q4_0"))
    ("seed", "random seed", cxxopts::value<uint64_t>()->default_value("0"));
  // clang-format on
  add_output_option(opts, "the model to write (GGUF)");
  add_threads_option(opts);
  add_json_option(opts, "on stdout: output, shape, type, size and seconds");
  cxxopts::ParseResult args;
  int exit_code = 0;
  if (!parse_command("synth", opts, argc, argv, &args, &exit_code)) return exit_code;
  if (!args.count("output")) return usage_error("synth", "no output file given (-o FILE.gguf)");
  brisk_synthesize_options o;
  brisk_synthesize_options_init(&o);
  std::string shape = args["shape"].as<std::string>(), type = args["type"].as<std::string>();
  o.shape = shape.c_str();
  o.weight_type = type.c_str();
  o.seed = args["seed"].as<uint64_t>();
  o.n_threads = threads_arg_resolved(args);
  const std::string out = args["output"].as<std::string>();
  double t0 = now_seconds();
  brisk_status st = brisk_synthesize_model(out.c_str(), &o);
  if (st != BRISK_OK) return report("synth", st);
  const double dt = now_seconds() - t0;
  if (args.count("json"))
    print_json(stdout, {{"output", out}, {"shape", shape}, {"type", type}, {"file_bytes", file_bytes(out)}, {"seconds", dt}});
  else
    std::fprintf(stderr, "wrote %s (%s, %s) in %.1f s\n", out.c_str(), shape.c_str(), type.c_str(), dt);
  return 0;
}

}  // namespace brisk::tools
