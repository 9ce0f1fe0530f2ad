// SPDX-License-Identifier: MIT
// brisk tokenize: show how a model's vocabulary splits text.
#include <cstdio>
#include <cxxopts.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "brisk/brisk.h"
#include "commands.h"
#include "common.h"

namespace brisk::tools {

int cmd_tokenize(int argc, char** argv) {
  cxxopts::Options opts("brisk tokenize",
                        "Print the tokens of a text: one 'id<TAB>piece' line per token, with --ids one JSON "
                        "array of ids,\nwith --json one JSON object. A vocabulary-only GGUF works.");
  add_model_option(opts, "model or vocabulary file (GGUF)");
  // clang-format off
  opts.add_options()
    ("p,prompt", "text to tokenize", cxxopts::value<std::string>())
    ("f,file", "read the text from a file", cxxopts::value<std::string>())
    ("no-bos", "do not add the BOS token")
    ("parse-special", "recognise special tokens such as <|im_start|> written in the text")
    ("ids", "print only a JSON array of token ids");
  // clang-format on
  add_json_option(opts, "on stdout: {\"n_tokens\": N, \"tokens\": [{\"id\": ID, \"piece\": TEXT}, ...]}");
  cxxopts::ParseResult args;
  int exit_code = 0;
  if (!parse_command("tokenize", opts, argc, argv, &args, &exit_code)) return exit_code;
  std::string model_path;
  model_arg("tokenize", args, &model_path);
  if (model_path.empty() || args.count("prompt") + args.count("file") != 1)
    return usage_error("tokenize", "need -m MODEL and exactly one of -p TEXT or -f FILE");
  if (args.count("ids") && args.count("json")) return usage_error("tokenize", "give --ids or --json, not both");
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
  brisk_status st = brisk_model_open(model_path.c_str(), &mo, &model);
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
    nlohmann::json tokens = nlohmann::json::array();
    std::vector<char> piece(256);
    for (int32_t id : ids) {
      st = brisk_token_to_piece(model, id, BRISK_PIECE_SPECIAL, piece.data(), piece.size(), &needed);
      if (st == BRISK_ERR_BUFFER_TOO_SMALL) {
        piece.resize(needed);
        st = brisk_token_to_piece(model, id, BRISK_PIECE_SPECIAL, piece.data(), piece.size(), &needed);
      }
      const std::string text(piece.data(), needed > 0 ? needed - 1 : 0);
      if (args.count("json")) {
        tokens.push_back({{"id", id}, {"piece", text}});
      } else {
        std::printf("%d\t", id);
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::printf("\n");
      }
    }
    if (args.count("json")) print_json(stdout, {{"n_tokens", ids.size()}, {"tokens", tokens}});
  }
  brisk_model_close(model);
  return 0;
}

}  // namespace brisk::tools
