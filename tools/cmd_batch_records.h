// SPDX-License-Identifier: MIT
// One `brisk batch` record turned into a request: parsed from its JSON line,
// rendered (chat template) and tokenized, or an error saying why not.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "brisk/brisk.h"

namespace brisk::tools::batch {

// Settings a record may override; the command line gives the defaults.
struct Defaults {
  int max_tokens = 128;
  brisk_sampler_options sampling{};
  std::string system;         // system prompt for chat records without one
  std::string chat_template;  // "" = from the model
  uint32_t n_ctx = 0;         // the engine's context, to refuse prompts too long
};

struct Request {
  uint64_t index = 0;
  nlohmann::json id;           // as given (string or number)
  std::string error;           // non-empty: the record fails with this
  std::vector<int32_t> tokens; // the whole prompt, BOS included
  int max_tokens = 0;
  brisk_sampler_options sampling{};
  std::vector<std::string> stop;
};

// Parses and tokenizes one input line.
Request prepare(const brisk_model* model, const Defaults& defaults, uint64_t index, const std::string& line);

// The output line (with '\n') of a finished record or of a failed one.
std::string result_line(const Request& r, const std::string& text, size_t completion_tokens,
                        const char* finish_reason);
std::string error_line(const Request& r);

}  // namespace brisk::tools::batch
