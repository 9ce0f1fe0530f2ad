// SPDX-License-Identifier: MIT
// `brisk run --chat`: an interactive, multi-turn conversation on stdin/stdout.
#pragma once
#include <string>

#include "brisk/brisk.h"

namespace brisk::tools {

struct ChatSettings {
  std::string system_prompt;
  std::string template_name;  // empty: recognise it from the model
  int n_predict = 512;        // most tokens per reply
};

int run_chat(brisk_model* model, brisk_session* session, brisk_sampler* sampler, const ChatSettings& settings);

}  // namespace brisk::tools
