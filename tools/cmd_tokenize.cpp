// brisk tokenize: show how a model's vocabulary splits text.
#include <cstdio>
#include <cxxopts.hpp>
#include <string>
#include <vector>

#include "brisk/brisk.h"
#include "commands.h"
#include "common.h"

namespace brisk::tools {

int cmd_tokenize(int argc, char** argv) {
  cxxopts::Options opts("brisk tokenize",
                        "Print the tokens of a text: one 'id<TAB>piece' line per token, or with --ids one JSON "
                        "array of ids.\nA vocabulary-only GGUF works.");
  // clang-format off
  opts.add_options()
    ("m,model", "model or vocabulary file (GGUF)", cxxopts::value<std::string>())
    ("p,prompt", "text to tokenize", cxxopts::value<std::string>())
    ("f,file", "read the text from a file", cxxopts::value<std::string>())
    ("no-bos", "do not add the BOS token")
    ("parse-special", "recognise special tokens such as <|im_start|> written in the text")
    ("ids", "print only a JSON array of token ids")
    ("h,help", "show this help");
  // clang-format on
  cxxopts::ParseResult args;
  try {
    args = opts.parse(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "brisk tokenize: error: %s (see 'brisk tokenize --help')\n", e.what());
    return 2;
  }
  if (args.count("help")) {
    std::printf("%s\n", opts.help().c_str());
    return 0;
  }
  if (!args.count("model") || args.count("prompt") + args.count("file") != 1) {
    std::fprintf(stderr, "brisk tokenize: error: need -m MODEL and exactly one of -p TEXT or -f FILE\n");
    return 2;
  }
  std::string text;
  if (args.count("file")) {
    if (!read_file("tokenize", args["file"].as<std::string>(), &text)) return 1;
  } else {
    text = args["prompt"].as<std::string>();
  }
  brisk_model_options mo;
  brisk_model_options_init(&mo);
  mo.vocab_only = 1;  // tokenizing needs no tensors: fast, and vocab-only files work
  brisk_model* model = nullptr;
  brisk_status st = brisk_model_open(args["model"].as<std::string>().c_str(), &mo, &model);
  if (st != BRISK_OK) return report("tokenize", st);
  uint32_t flags = 0;
  if (!args.count("no-bos")) flags |= BRISK_TOKENIZE_ADD_BOS;
  if (args.count("parse-special")) flags |= BRISK_TOKENIZE_PARSE_SPECIAL;
  size_t needed = 0;
  std::vector<int32_t> ids;
  st = brisk_tokenize(model, text.data(), text.size(), flags, nullptr, 0, &needed);
  if (st == BRISK_ERR_BUFFER_TOO_SMALL || st == BRISK_OK) {
    ids.resize(needed);
    st = brisk_tokenize(model, text.data(), text.size(), flags, ids.data(), ids.size(), &needed);
  }
  if (st != BRISK_OK) {
    int rc = report("tokenize", st);
    brisk_model_close(model);
    return rc;
  }
  if (args.count("ids")) {
    std::string out = "[";
    for (size_t i = 0; i < ids.size(); ++i) out += (i ? ", " : "") + std::to_string(ids[i]);
    std::printf("%s]\n", out.c_str());
  } else {
    std::vector<char> piece(256);
    for (int32_t id : ids) {
      st = brisk_token_to_piece(model, id, BRISK_PIECE_SPECIAL, piece.data(), piece.size(), &needed);
      if (st == BRISK_ERR_BUFFER_TOO_SMALL) {
        piece.resize(needed);
        st = brisk_token_to_piece(model, id, BRISK_PIECE_SPECIAL, piece.data(), piece.size(), &needed);
      }
      std::printf("%d\t", id);
      std::fwrite(piece.data(), 1, needed > 0 ? needed - 1 : 0, stdout);
      std::printf("\n");
    }
  }
  brisk_model_close(model);
  return 0;
}

}  // namespace brisk::tools
