// brisk convert: Hugging Face or llama2.c checkpoints to GGUF.
#include <cstdio>
#include <cxxopts.hpp>
#include <string>

#include "brisk/brisk.h"
#include "commands.h"
#include "common.h"
#include "progress.h"

namespace brisk::tools {

int cmd_convert(int argc, char** argv) {
  cxxopts::Options opts("brisk convert",
                        "Convert a Hugging Face model directory (Llama, Mistral, Qwen2 safetensors) or a llama2.c\n"
                        "checkpoint to GGUF, with an embedded checksum manifest.\n\n"
                        "  brisk convert HF_DIR -o OUT.gguf [--type f16]\n"
                        "  brisk convert --from-llama2c MODEL.bin --tokenizer TOK.bin -o OUT.gguf");
  // clang-format off
  opts.add_options()
    ("input", "Hugging Face model directory", cxxopts::value<std::string>())
    ("from-llama2c", "llama2.c checkpoint (legacy .bin) to convert", cxxopts::value<std::string>())
    ("tokenizer", "llama2.c tokenizer .bin (with --from-llama2c)", cxxopts::value<std::string>())
    ("o,output", "output GGUF file", cxxopts::value<std::string>())
    ("type", "matrix type: auto (the source's), f32, f16, bf16, q8_0, q4_0, q4_1, q4_k, q5_k, q6_k",
     cxxopts::value<std::string>()->default_value("auto"))
    ("name", "general.name (default: the directory's name)", cxxopts::value<std::string>())
    ("t,threads", "threads (0 = all cores)", cxxopts::value<int>()->default_value("0"))
    ("h,help", "show this help");
  // clang-format on
  opts.parse_positional({"input"});
  cxxopts::ParseResult args;
  try {
    args = opts.parse(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "brisk convert: error: %s (see 'brisk convert --help')\n", e.what());
    return 2;
  }
  if (args.count("help")) {
    std::printf("%s\n", opts.help().c_str());
    return 0;
  }
  const bool llama2c = args.count("from-llama2c") > 0;
  if (!args.count("output") || (llama2c ? !args.count("tokenizer") || args.count("input") : !args.count("input"))) {
    std::fprintf(stderr, "brisk convert: error: give HF_DIR -o OUT.gguf, or --from-llama2c MODEL.bin --tokenizer "
                         "TOK.bin -o OUT.gguf\n");
    return 2;
  }
  brisk_convert_options o;
  brisk_convert_options_init(&o);
  if (!parse_type(args["type"].as<std::string>(), &o.type)) {
    std::fprintf(stderr, "brisk convert: error: unknown type '%s'\n", args["type"].as<std::string>().c_str());
    return 2;
  }
  std::string name = args.count("name") ? args["name"].as<std::string>() : "";
  if (!name.empty()) o.name = name.c_str();
  o.n_threads = static_cast<uint32_t>(std::max(0, args["threads"].as<int>()));
  o.progress_fn = file_op_progress;
  o.abort_fn = file_op_abort;
  o.log_fn = file_op_log;
  catch_sigint();
  const std::string out = args["output"].as<std::string>();
  const double t0 = now_seconds();
  const brisk_status st =
      llama2c ? brisk_convert_llama2c(args["from-llama2c"].as<std::string>().c_str(),
                                      args["tokenizer"].as<std::string>().c_str(), out.c_str(), &o)
              : brisk_convert_hf(args["input"].as<std::string>().c_str(), out.c_str(), &o);
  if (st != BRISK_OK) return report("convert", st);
  std::fprintf(stderr, "wrote %s in %.2f s\n", out.c_str(), now_seconds() - t0);
  return 0;
}

}  // namespace brisk::tools
