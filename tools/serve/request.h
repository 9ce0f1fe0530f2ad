// SPDX-License-Identifier: MIT
// OpenAI request bodies to jobs: every field checked for type and range
// before anything is queued, so a bad request gets one clear 400.
#pragma once
#include <string>

#include "brisk/brisk.h"
#include "serve/job.h"

namespace brisk::serve {

struct RequestLimits {
  int n_ctx = 0;              // context per sequence: prompt + completion
  int max_tokens = 0;         // largest max_tokens a request may ask for
  std::string chat_template;  // "" : the model's own
};

struct RequestError {
  int status = 400;
  std::string message;
  std::string param;  // the offending field ("" : none)
  std::string type = "invalid_request_error";
};

// Fills the job from a /v1/chat/completions (chat) or /v1/completions body.
// *prompt_text receives the text the prompt was tokenized from. Returns false
// with *err filled for a bad request.
bool parse_request(const std::string& body, bool chat, const brisk_model* model, const RequestLimits& limits,
                   Job* job, std::string* prompt_text, RequestError* err);

// Whether the chat format `name` ("" : the model's own template) renders.
bool chat_template_works(const brisk_model* model, const std::string& name);

}  // namespace brisk::serve
