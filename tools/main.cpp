// SPDX-License-Identifier: MIT
// `brisk`: one command, many subcommands. Each subcommand lives in its own
// file and is a thin client of brisk.h.
#include <cstdio>
#include <cstring>
#include <string>

#include "brisk/brisk.h"
#include "commands.h"

namespace {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(int argc, char** argv);
};

const Command kCommands[] = {
    {"run", "generate text from a prompt", brisk::tools::cmd_run},
    {"bench", "measure prompt and generation speed, single and parallel", brisk::tools::cmd_bench},
    {"tokenize", "show the tokens of a text", brisk::tools::cmd_tokenize},
    {"synth", "write a random-weight model in the shape of a real one", brisk::tools::cmd_synth},
    {"convert", "convert a Hugging Face or llama2.c checkpoint to GGUF", brisk::tools::cmd_convert},
    {"verify", "check a model's or bundle's checksums; add a manifest", brisk::tools::cmd_verify},
    {"pack", "compress a GGUF into a verified .brisk bundle", brisk::tools::cmd_pack},
    {"unpack", "restore a GGUF from a .brisk bundle, verifying it", brisk::tools::cmd_unpack},
    {"quantize", "quantize a GGUF model (optionally calibrated)", brisk::tools::cmd_quantize},
    {"calibrate", "record activation statistics over your text", brisk::tools::cmd_calibrate},
    {"compare", "greedy outputs of two models side by side", brisk::tools::cmd_compare},
    {"ppl", "perplexity and KL divergence against a base model", brisk::tools::cmd_ppl},
    {"serve", "OpenAI-compatible HTTP server with continuous batching", brisk::tools::cmd_serve},
    {"batch", "generate for every record of a JSONL file, resumable", brisk::tools::cmd_batch},
    {"doctor", "check this machine for what slows brisk down", brisk::tools::cmd_doctor},
    {"tune", "measure and cache the fastest kernels for this machine and a model", brisk::tools::cmd_tune},
};

void print_usage(FILE* out) {
  std::fprintf(out,
               "brisk %s: fast CPU inference for quantized Llama-family models\n\n"
               "usage: brisk <command> [options]\n\ncommands:\n",
               brisk_version());
  for (const Command& c : kCommands) std::fprintf(out, "  %-10s %s\n", c.name, c.summary);
  std::fprintf(out,
               "\nEvery command spells the common options the same way:\n"
               "  -m, --model FILE   the input model\n"
               "  -o, --output FILE  the file to write (written to a temporary file, then renamed)\n"
               "  -t, --threads N    worker threads; 0 (the default) = one per physical core\n"
               "  --json             results as JSON on stdout (run: its timings on stderr, after the text)\n"
               "Long commands show progress on stderr: a bar on a terminal, a plain line every 10 s otherwise.\n"
               "Usage errors exit with 2, failures with 1; Ctrl-C stops cleanly.\n"
               "\n'brisk <command> --help' shows a command's options.\n"
               "'brisk --version' prints the version.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    print_usage(stderr);
    return 2;
  }
  std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    print_usage(stdout);
    return 0;
  }
  if (name == "--version" || name == "version") {
    std::printf("brisk %s (ABI %u.%u)\n", brisk_version(), brisk_abi_version() >> 16,
                brisk_abi_version() & 0xffff);
    return 0;
  }
  for (const Command& c : kCommands)
    if (name == c.name) return c.run(argc - 1, argv + 1);
  std::fprintf(stderr, "brisk: unknown command '%s' (see 'brisk --help')\n", name.c_str());
  return 2;
}
