// brisk pack / brisk unpack: .brisk bundles (zstd-compressed GGUF with checksums).
#include <sys/stat.h>

#include <cstdio>
#include <cxxopts.hpp>
#include <string>

#include "brisk/brisk.h"
#include "commands.h"
#include "common.h"
#include "progress.h"

namespace brisk::tools {

namespace {

double file_mb(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<double>(st.st_size) / 1e6 : 0.0;
}

int pack_or_unpack(int argc, char** argv, bool packing) {
  const char* cmd = packing ? "pack" : "unpack";
  cxxopts::Options opts(std::string("brisk ") + cmd,
                        packing ? "Compress a GGUF model into a .brisk bundle (zstd) that carries its checksums.\n\n"
                                  "  brisk pack MODEL.gguf -o MODEL.brisk [--level N] [--threads N]"
                                : "Unpack a .brisk bundle, verifying every checksum; the GGUF appears only if all match.\n\n"
                                  "  brisk unpack MODEL.brisk -o MODEL.gguf");
  // clang-format off
  opts.add_options()
    ("input", "input file", cxxopts::value<std::string>())
    ("o,output", "output file", cxxopts::value<std::string>())
    ("t,threads", "threads (0 = all cores)", cxxopts::value<int>()->default_value("0"))
    ("h,help", "show this help");
  if (packing) opts.add_options()
    ("level", "zstd level 1..22", cxxopts::value<int>()->default_value("3"))
    ("long", "long-distance matching: auto, on, off", cxxopts::value<std::string>()->default_value("auto"));
  // clang-format on
  opts.parse_positional({"input"});
  cxxopts::ParseResult args;
  try {
    args = opts.parse(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "brisk %s: error: %s (see 'brisk %s --help')\n", cmd, e.what(), cmd);
    return 2;
  }
  if (args.count("help")) {
    std::printf("%s\n", opts.help().c_str());
    return 0;
  }
  if (!args.count("input") || !args.count("output")) {
    std::fprintf(stderr, "brisk %s: error: give an input file and -o OUTPUT\n", cmd);
    return 2;
  }
  brisk_pack_options o;
  brisk_pack_options_init(&o);
  o.n_threads = static_cast<uint32_t>(std::max(0, args["threads"].as<int>()));
  if (packing) {
    o.level = args["level"].as<int>();
    const std::string l = args["long"].as<std::string>();
    if (l != "auto" && l != "on" && l != "off") {
      std::fprintf(stderr, "brisk pack: error: --long takes auto, on or off\n");
      return 2;
    }
    o.long_distance = l == "auto" ? -1 : l == "on" ? 1 : 0;
  }
  o.progress_fn = file_op_progress;
  o.abort_fn = file_op_abort;
  o.log_fn = file_op_log;
  catch_sigint();
  const std::string in = args["input"].as<std::string>(), out = args["output"].as<std::string>();
  const double t0 = now_seconds();
  const brisk_status st = packing ? brisk_pack(in.c_str(), out.c_str(), &o) : brisk_unpack(in.c_str(), out.c_str(), &o);
  if (st != BRISK_OK) return report(cmd, st);
  const double dt = now_seconds() - t0, gguf_mb = file_mb(packing ? in : out), bundle_mb = file_mb(packing ? out : in);
  std::fprintf(stderr, "%s %s: %.2f MB GGUF, %.2f MB bundle (ratio %.3f) in %.2f s, %.1f MB/s of GGUF\n",
               packing ? "packed" : "unpacked and verified", out.c_str(), gguf_mb, bundle_mb,
               gguf_mb > 0 ? bundle_mb / gguf_mb : 0.0, dt, gguf_mb / std::max(dt, 1e-9));
  return 0;
}

}  // namespace

int cmd_pack(int argc, char** argv) { return pack_or_unpack(argc, argv, true); }
int cmd_unpack(int argc, char** argv) { return pack_or_unpack(argc, argv, false); }

}  // namespace brisk::tools
