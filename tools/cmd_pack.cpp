// SPDX-License-Identifier: MIT
// brisk pack / brisk unpack: .brisk bundles (zstd-compressed GGUF with checksums).
#include <algorithm>
#include <cstdio>
#include <cxxopts.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "brisk/brisk.h"
#include "commands.h"
#include "common.h"
#include "load_options.h"
#include "progress.h"

namespace brisk::tools {

namespace {

int pack_or_unpack(int argc, char** argv, bool packing) {
  const char* cmd = packing ? "pack" : "unpack";
  cxxopts::Options opts(std::string("brisk ") + cmd,
                        packing ? "Compress a GGUF model into a .brisk bundle (zstd) that carries its checksums.\n\n"
                                  "  brisk pack -m MODEL.gguf -o MODEL.brisk [--level N] [--threads N]"
                                : "Unpack a .brisk bundle, verifying every checksum; the GGUF appears only if all match.\n\n"
                                  "  brisk unpack -m MODEL.brisk -o MODEL.gguf");
  add_model_option_positional(opts, packing ? "the GGUF model to pack" : "the .brisk bundle to unpack");
  add_output_option(opts, packing ? "the bundle to write" : "the GGUF to write");
  // clang-format off
  if (packing) opts.add_options()
    ("level", "zstd level 1..22", cxxopts::value<int>()->default_value("3"))
    ("long", "long-distance matching: auto, on, off", cxxopts::value<std::string>()->default_value("auto"));
  // clang-format on
  if (packing) add_read_options(opts, "the GGUF");  // a bundle is streamed, never mapped
  add_threads_option(opts);
  add_json_option(opts, "on stdout: input, output, GGUF and bundle bytes, ratio and seconds");
  cxxopts::ParseResult args;
  int exit_code = 0;
  if (!parse_command(cmd, opts, argc, argv, &args, &exit_code)) return exit_code;
  std::string in;
  if (!model_arg(cmd, args, &in)) return 2;
  if (in.empty() || !args.count("output")) return usage_error(cmd, "give -m INPUT and -o OUTPUT");
  brisk_pack_options o;
  brisk_pack_options_init(&o);
  o.n_threads = threads_arg_resolved(args);
  if (packing) {
    o.level = args["level"].as<int>();
    const std::string l = args["long"].as<std::string>();
    if (l != "auto" && l != "on" && l != "off") return usage_error(cmd, "--long takes auto, on or off");
    o.long_distance = l == "auto" ? -1 : l == "on" ? 1 : 0;
    apply_read_options(args, &o);
  }
  Progress progress;
  o.progress_fn = Progress::callback;
  o.progress_user_data = &progress;
  o.abort_fn = abort_requested;
  o.log_fn = Progress::log;
  o.log_user_data = &progress;
  catch_sigint();
  const std::string out = args["output"].as<std::string>();
  const double t0 = now_seconds();
  const brisk_status st = packing ? brisk_pack(in.c_str(), out.c_str(), &o) : brisk_unpack(in.c_str(), out.c_str(), &o);
  progress.finish();
  if (st != BRISK_OK) return report(cmd, st);
  const double dt = now_seconds() - t0;
  const uint64_t gguf = file_bytes(packing ? in : out), bundle = file_bytes(packing ? out : in);
  const double ratio = gguf > 0 ? static_cast<double>(bundle) / static_cast<double>(gguf) : 0.0;
  if (args.count("json")) {
    print_json(stdout, {{"input", in},
                        {"output", out},
                        {"gguf_bytes", gguf},
                        {"bundle_bytes", bundle},
                        {"ratio", ratio},
                        {"seconds", dt}});
    return 0;
  }
  std::fprintf(stderr, "%s %s: %.2f MB GGUF, %.2f MB bundle (ratio %.3f) in %.2f s, %.1f MB/s of GGUF\n",
               packing ? "packed" : "unpacked and verified", out.c_str(), gguf / 1e6, bundle / 1e6, ratio, dt,
               gguf / 1e6 / std::max(dt, 1e-9));
  return 0;
}

}  // namespace

int cmd_pack(int argc, char** argv) { return pack_or_unpack(argc, argv, true); }
int cmd_unpack(int argc, char** argv) { return pack_or_unpack(argc, argv, false); }

}  // namespace brisk::tools
