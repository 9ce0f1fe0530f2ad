// brisk synth: write a model with random weights in the shape of a real one.
#include <algorithm>
#include <cstdio>
#include <cxxopts.hpp>
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
    ("seed", "random seed", cxxopts::value<uint64_t>()->default_value("0"))
    ("t,threads", "threads (0 = all cores)", cxxopts::value<int>()->default_value("0"))
    ("o,output", "output file", cxxopts::value<std::string>())
    ("h,help", "show this help");
  // clang-format on
  cxxopts::ParseResult args;
  try {
    args = opts.parse(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "brisk synth: error: %s (see 'brisk synth --help')\n", e.what());
    return 2;
  }
  if (args.count("help")) {
    std::printf("%s\n", opts.help().c_str());
    return 0;
  }
  if (!args.count("output")) {
    std::fprintf(stderr, "brisk synth: error: no output file given (-o FILE.gguf)\n");
    return 2;
  }
  brisk_synthesize_options o;
  brisk_synthesize_options_init(&o);
  std::string shape = args["shape"].as<std::string>(), type = args["type"].as<std::string>();
  o.shape = shape.c_str();
  o.weight_type = type.c_str();
  o.seed = args["seed"].as<uint64_t>();
  o.n_threads = static_cast<uint32_t>(std::max(0, args["threads"].as<int>()));
  const std::string out = args["output"].as<std::string>();
  double t0 = now_seconds();
  brisk_status st = brisk_synthesize_model(out.c_str(), &o);
  if (st != BRISK_OK) return report("synth", st);
  std::fprintf(stderr, "wrote %s (%s, %s) in %.1f s\n", out.c_str(), shape.c_str(), type.c_str(), now_seconds() - t0);
  return 0;
}

}  // namespace brisk::tools
