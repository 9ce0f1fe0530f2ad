// SPDX-License-Identifier: MIT
// brisk convert: Hugging Face or llama2.c checkpoints to GGUF.
#include <sys/stat.h>

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

int cmd_convert(int argc, char** argv) {
  cxxopts::Options opts("brisk convert",
                        "Convert a Hugging Face model directory (Llama, Mistral, Qwen2 safetensors) or a llama2.c\n"
                        "checkpoint to GGUF, with an embedded checksum manifest.\n\n"
                        "  brisk convert -m HF_DIR -o OUT.gguf [--type f16]\n"
                        "  brisk convert -m MODEL.bin --tokenizer TOK.bin -o OUT.gguf   (llama2.c)");
  add_model_option_positional(opts, "the source: a Hugging Face model directory, or a llama2.c checkpoint (.bin)");
  add_output_option(opts, "output GGUF file");
  // clang-format off
  opts.add_options()
    ("tokenizer", "llama2.c tokenizer .bin (for a llama2.c checkpoint)", cxxopts::value<std::string>(), "FILE")
    ("from-llama2c", "same as -m for a llama2.c checkpoint (the older spelling)", cxxopts::value<std::string>(), "FILE")
    ("type", "matrix type: auto (the source's), f32, f16, bf16, q8_0, q4_0, q4_1, q4_k, q5_k, q6_k",
     cxxopts::value<std::string>()->default_value("auto"))
    ("name", "general.name (default: the directory's name)", cxxopts::value<std::string>());
  // clang-format on
  add_read_options(opts, "the checkpoint's files");
  add_threads_option(opts);
  add_json_option(opts, "on stdout: source, format, output, its size and seconds");
  cxxopts::ParseResult args;
  int exit_code = 0;
  if (!parse_command("convert", opts, argc, argv, &args, &exit_code)) return exit_code;
  std::string src;
  if (!model_arg("convert", args, &src, "from-llama2c")) return 2;
  if (src.empty() || !args.count("output"))
    return usage_error("convert", "give -m HF_DIR -o OUT.gguf, or -m MODEL.bin --tokenizer TOK.bin -o OUT.gguf");
  // A directory is a Hugging Face model; a file, a llama2.c checkpoint.
  struct stat sst {};
  const bool is_file = ::stat(src.c_str(), &sst) == 0 && S_ISREG(sst.st_mode);
  const bool llama2c = args.count("from-llama2c") || args.count("tokenizer") || is_file;
  if (llama2c && !args.count("tokenizer"))
    return usage_error("convert", "'" + src + "' is a file: a llama2.c checkpoint needs --tokenizer TOK.bin");
  brisk_convert_options o;
  brisk_convert_options_init(&o);
  apply_read_options(args, &o);
  if (!parse_type(args["type"].as<std::string>(), &o.type))
    return usage_error("convert", "unknown type '" + args["type"].as<std::string>() + "'");
  std::string name = args.count("name") ? args["name"].as<std::string>() : "";
  if (!name.empty()) o.name = name.c_str();
  o.n_threads = threads_arg_resolved(args);
  Progress progress;
  o.progress_fn = Progress::callback;
  o.progress_user_data = &progress;
  o.abort_fn = abort_requested;
  o.log_fn = Progress::log;
  o.log_user_data = &progress;
  catch_sigint();
  const std::string out = args["output"].as<std::string>();
  const double t0 = now_seconds();
  const brisk_status st =
      llama2c ? brisk_convert_llama2c(src.c_str(), args["tokenizer"].as<std::string>().c_str(), out.c_str(), &o)
              : brisk_convert_hf(src.c_str(), out.c_str(), &o);
  progress.finish();
  if (st != BRISK_OK) return report("convert", st);
  const double dt = now_seconds() - t0;
  if (args.count("json"))
    print_json(stdout, {{"source", src},
                        {"format", llama2c ? "llama2c" : "hf"},
                        {"output", out},
                        {"file_bytes", file_bytes(out)},
                        {"seconds", dt}});
  else
    std::fprintf(stderr, "wrote %s in %.2f s\n", out.c_str(), dt);
  return 0;
}

}  // namespace brisk::tools
