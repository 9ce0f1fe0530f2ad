// brisk verify: recompute a model's (or bundle's) checksums; --add-manifest
// gives a GGUF without one a manifest.
#include <unistd.h>

#include <cstdio>
#include <cxxopts.hpp>
#include <string>

#include "brisk/brisk.h"
#include "commands.h"
#include "common.h"
#include "progress.h"

namespace brisk::tools {

namespace {
void print_mismatch(void*, const char* where, const char* detail) {
  std::fprintf(stdout, "MISMATCH %s: %s\n", where, detail);
}
}  // namespace

int cmd_verify(int argc, char** argv) {
  cxxopts::Options opts("brisk verify",
                        "Check a GGUF model against its embedded checksum manifest, or a .brisk bundle against its\n"
                        "own; prints OK or every place that differs.\n\n"
                        "  brisk verify FILE\n"
                        "  brisk verify --add-manifest FILE [-o OUT.gguf]");
  // clang-format off
  opts.add_options()
    ("file", "GGUF or .brisk file", cxxopts::value<std::string>())
    ("add-manifest", "rewrite the GGUF with a fresh checksum manifest")
    ("o,output", "with --add-manifest: write here instead of in place", cxxopts::value<std::string>())
    ("t,threads", "threads (0 = all cores)", cxxopts::value<int>()->default_value("0"))
    ("h,help", "show this help");
  // clang-format on
  opts.parse_positional({"file"});
  cxxopts::ParseResult args;
  try {
    args = opts.parse(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "brisk verify: error: %s (see 'brisk verify --help')\n", e.what());
    return 2;
  }
  if (args.count("help")) {
    std::printf("%s\n", opts.help().c_str());
    return 0;
  }
  if (!args.count("file")) {
    std::fprintf(stderr, "brisk verify: error: no file given\n");
    return 2;
  }
  const std::string file = args["file"].as<std::string>();
  brisk_verify_options o;
  brisk_verify_options_init(&o);
  o.n_threads = static_cast<uint32_t>(std::max(0, args["threads"].as<int>()));
  o.progress_fn = file_op_progress;
  o.abort_fn = file_op_abort;
  o.mismatch_fn = print_mismatch;
  catch_sigint();
  const double t0 = now_seconds();
  if (args.count("add-manifest")) {
    const std::string out = args.count("output") ? args["output"].as<std::string>() : file;
    const brisk_status st = brisk_add_manifest(file.c_str(), out.c_str(), &o);
    if (st != BRISK_OK) return report("verify", st);
    std::fprintf(stderr, "wrote %s with a checksum manifest in %.2f s\n", out.c_str(), now_seconds() - t0);
    return 0;
  }
  uint64_t bytes = 0;
  const brisk_status st = brisk_verify(file.c_str(), &o, &bytes);
  const double dt = now_seconds() - t0;
  // NOT_FOUND also means a missing file; only an existing one lacks a manifest.
  if (st == BRISK_ERR_NOT_FOUND && ::access(file.c_str(), F_OK) == 0) {
    std::printf("NO MANIFEST %s\n", file.c_str());
    std::fprintf(stderr, "brisk verify: %s has no checksum manifest; add one with 'brisk verify --add-manifest %s'\n",
                 file.c_str(), file.c_str());
    return 1;
  }
  if (st == BRISK_ERR_CHECKSUM) {
    std::printf("FAILED %s\n", file.c_str());
    return 1;
  }
  if (st != BRISK_OK) return report("verify", st);
  std::printf("OK %s\n", file.c_str());
  std::fprintf(stderr, "%.1f MB checked in %.3f s (%.2f GB/s)\n", static_cast<double>(bytes) / 1e6, dt,
               static_cast<double>(bytes) / 1e9 / std::max(dt, 1e-9));
  return 0;
}

}  // namespace brisk::tools
