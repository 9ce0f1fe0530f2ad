// SPDX-License-Identifier: MIT
#include "serve/request.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

namespace brisk::serve {

using nlohmann::json;

namespace {

[[noreturn]] void bad(const std::string& param, const std::string& message) {
  RequestError e;
  e.param = param;
  e.message = message;
  throw e;
}

const json* field(const json& body, const char* name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

double number(const json& body, const char* name, double def, double lo, double hi) {
  const json* v = field(body, name);
  if (!v) return def;
  if (!v->is_number()) bad(name, std::string("'") + name + "' must be a number");
  const double x = v->get<double>();
  if (!(x >= lo && x <= hi))
    bad(name, std::string("'") + name + "' must be between " + json(lo).dump() + " and " + json(hi).dump());
  return x;
}

int64_t integer(const json& body, const char* name, int64_t def, int64_t lo, int64_t hi) {
  const json* v = field(body, name);
  if (!v) return def;
  if (!v->is_number_integer()) bad(name, std::string("'") + name + "' must be an integer");
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    bad(name, std::string("'") + name + "' is out of range");
  const int64_t x = v->get<int64_t>();
  if (x < lo || x > hi)
    bad(name, std::string("'") + name + "' must be between " + std::to_string(lo) + " and " + std::to_string(hi));
  return x;
}

bool boolean(const json& body, const char* name, bool def) {
  const json* v = field(body, name);
  if (!v) return def;
  if (!v->is_boolean()) bad(name, std::string("'") + name + "' must be true or false");
  return v->get<bool>();
}

std::vector<int32_t> tokenize(const brisk_model* model, const std::string& text, uint32_t flags) {
  size_t needed = 0;
  brisk_status st = brisk_tokenize(model, text.data(), text.size(), flags, nullptr, 0, &needed);
  if (st != BRISK_OK && st != BRISK_ERR_BUFFER_TOO_SMALL) bad("", std::string("cannot tokenize: ") + brisk_last_error());
  std::vector<int32_t> ids(needed);
  st = brisk_tokenize(model, text.data(), text.size(), flags, ids.data(), ids.size(), &needed);
  if (st != BRISK_OK) bad("", std::string("cannot tokenize: ") + brisk_last_error());
  ids.resize(needed);
  return ids;
}

std::string message_text(const json& content, size_t i) {
  const std::string where = "messages[" + std::to_string(i) + "].content";
  if (content.is_null()) return "";
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) bad(where, "'" + where + "' must be a string or an array of text parts");
  std::string text;
  for (const json& part : content) {
    if (!part.is_object() || part.value("type", json()) != "text" || !part.contains("text") ||
        !part["text"].is_string())
      bad(where, "'" + where + "' may hold only {\"type\": \"text\", \"text\": ...} parts");
    text += part["text"].get<std::string>();
  }
  return text;
}

std::string render_chat(const json& body, const brisk_model* model, const std::string& tmpl) {
  const json* msgs = field(body, "messages");
  if (!msgs) bad("messages", "'messages' is required");
  if (!msgs->is_array() || msgs->empty()) bad("messages", "'messages' must be a non-empty array");
  std::vector<std::string> roles, contents;
  for (size_t i = 0; i < msgs->size(); ++i) {
    const json& m = (*msgs)[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) bad(where, "'" + where + "' must be an object");
    if (!m.contains("role") || !m["role"].is_string()) bad(where + ".role", "'" + where + ".role' must be a string");
    std::string role = m["role"].get<std::string>();
    if (role == "developer") role = "system";
    if (role != "system" && role != "user" && role != "assistant")
      bad(where + ".role", "role '" + role + "' is not supported (system, developer, user, assistant)");
    roles.push_back(role);
    contents.push_back(message_text(m.contains("content") ? m["content"] : json(), i));
  }
  std::vector<const char*> r, c;
  for (size_t i = 0; i < roles.size(); ++i) {
    r.push_back(roles[i].c_str());
    c.push_back(contents[i].c_str());
  }
  const char* name = tmpl.empty() ? nullptr : tmpl.c_str();
  size_t needed = 0;
  brisk_status st = brisk_chat_render(model, name, r.data(), c.data(), r.size(), 1, nullptr, 0, &needed);
  if (st != BRISK_OK && st != BRISK_ERR_BUFFER_TOO_SMALL) bad("messages", std::string("cannot render the chat: ") + brisk_last_error());
  std::string out(needed, '\0');
  st = brisk_chat_render(model, name, r.data(), c.data(), r.size(), 1, out.data(), out.size(), &needed);
  if (st != BRISK_OK) bad("messages", std::string("cannot render the chat: ") + brisk_last_error());
  out.resize(needed > 0 ? needed - 1 : 0);
  return out;
}

// A completion prompt: a string, one string in an array, or token ids.
std::vector<int32_t> completion_prompt(const json& body, const brisk_model* model, std::string* text) {
  const json* p = field(body, "prompt");
  if (!p) bad("prompt", "'prompt' is required");
  const json* one = p;
  if (p->is_array() && p->size() == 1 && ((*p)[0].is_string() || (*p)[0].is_array())) one = &(*p)[0];
  if (one->is_string()) {
    *text = one->get<std::string>();
    return tokenize(model, *text, BRISK_TOKENIZE_ADD_BOS);
  }
  if (one->is_array() && !one->empty()) {
    const int32_t n_vocab = brisk_model_n_vocab(model);
    std::vector<int32_t> ids;
    for (const json& t : *one) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= n_vocab)
        bad("prompt", "token ids in 'prompt' must be integers in [0, " + std::to_string(n_vocab) + ")");
      ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
    }
    return ids;
  }
  bad("prompt", "'prompt' must be a string, an array of one string, or an array of token ids (n=1 only)");
}

std::vector<std::string> stop_strings(const json& body) {
  const json* s = field(body, "stop");
  std::vector<std::string> out;
  if (!s) return out;
  if (s->is_string()) {
    out.push_back(s->get<std::string>());
  } else if (s->is_array()) {
    for (const json& x : *s) {
      if (!x.is_string()) bad("stop", "'stop' must be a string or an array of strings");
      out.push_back(x.get<std::string>());
    }
  } else {
    bad("stop", "'stop' must be a string or an array of strings");
  }
  if (out.size() > 4) bad("stop", "'stop' holds at most 4 strings");
  for (const std::string& x : out)
    if (x.empty()) bad("stop", "stop strings must not be empty");
  return out;
}

void refuse_unsupported(const json& body) {
  static const char* kUnsupported[] = {"tools", "functions", "logit_bias", "tool_choice", "function_call", "suffix"};
  for (const char* k : kUnsupported)
    if (const json* v = field(body, k); v && !(v->is_array() && v->empty()) && !(v->is_object() && v->empty()))
      bad(k, std::string("'") + k + "' is not supported by this server");
  if (const json* v = field(body, "logprobs"); v && !(v->is_boolean() && !v->get<bool>()))
    bad("logprobs", "'logprobs' is not supported by this server");
  if (const json* v = field(body, "echo"); v && !(v->is_boolean() && !v->get<bool>()))
    bad("echo", "'echo' is not supported by this server");
  if (integer(body, "best_of", 1, 1, 1) != 1) bad("best_of", "'best_of' must be 1");
  if (const json* v = field(body, "response_format")) {
    if (!v->is_object() || v->value("type", json()) != "text")
      bad("response_format", "only {\"type\": \"text\"} is supported for 'response_format'");
  }
}

}  // namespace

bool chat_template_works(const brisk_model* model, const std::string& name) {
  const char* roles[] = {"user"};
  const char* contents[] = {"hi"};
  size_t needed = 0;
  const brisk_status st =
      brisk_chat_render(model, name.empty() ? nullptr : name.c_str(), roles, contents, 1, 1, nullptr, 0, &needed);
  return st == BRISK_OK || st == BRISK_ERR_BUFFER_TOO_SMALL;
}

bool parse_request(const std::string& body_text, bool chat, const brisk_model* model, const RequestLimits& limits,
                   Job* job, std::string* prompt_text, RequestError* err) {
  try {
    json body;
    try {
      body = json::parse(body_text);
    } catch (const json::exception& e) {
      bad("", std::string("the body is not valid JSON: ") + e.what());
    }
    if (!body.is_object()) bad("", "the body must be a JSON object");
    if (const json* m = field(body, "model"); m && !m->is_string()) bad("model", "'model' must be a string");
    if (integer(body, "n", 1, 1, 128) != 1) bad("n", "only n=1 is supported");
    refuse_unsupported(body);
    job->chat = chat;
    job->stream = boolean(body, "stream", false);
    if (const json* so = field(body, "stream_options")) {
      if (!so->is_object()) bad("stream_options", "'stream_options' must be an object");
      job->include_usage = boolean(*so, "include_usage", false);
    }
    job->temperature = static_cast<float>(number(body, "temperature", 1.0, 0.0, 2.0));
    job->top_p = static_cast<float>(number(body, "top_p", 1.0, 0.0, 1.0));
    job->presence_penalty = static_cast<float>(number(body, "presence_penalty", 0.0, -2.0, 2.0));
    job->frequency_penalty = static_cast<float>(number(body, "frequency_penalty", 0.0, -2.0, 2.0));
    if (field(body, "seed")) {
      job->seed = static_cast<uint64_t>(integer(body, "seed", 0, INT64_MIN, INT64_MAX));
    } else {
      job->seed = std::random_device{}();
    }
    job->stop = stop_strings(body);
    job->matcher = StopMatcher(job->stop);
    const char* max_name = chat && field(body, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
    const int64_t asked = integer(body, max_name, -1, 1, limits.max_tokens);

    if (chat) {
      *prompt_text = render_chat(body, model, limits.chat_template);
      job->prompt = tokenize(model, *prompt_text, BRISK_TOKENIZE_ADD_BOS | BRISK_TOKENIZE_PARSE_SPECIAL);
    } else {
      job->prompt = completion_prompt(body, model, prompt_text);
    }
    const int64_t n = static_cast<int64_t>(job->prompt.size());
    if (n == 0) bad(chat ? "messages" : "prompt", "the prompt is empty (and the model adds no BOS token)");
    if (n >= limits.n_ctx)
      bad(chat ? "messages" : "prompt", "the prompt is " + std::to_string(n) + " tokens; the context holds " +
                                            std::to_string(limits.n_ctx) + ", and at least one must be left to generate");
    if (asked > 0 && n + asked > limits.n_ctx)
      bad(max_name, "the prompt (" + std::to_string(n) + " tokens) plus " + max_name + " (" + std::to_string(asked) +
                        ") exceeds the context of " + std::to_string(limits.n_ctx) + " tokens");
    job->max_tokens = static_cast<int>(asked > 0 ? asked : std::min<int64_t>(limits.max_tokens, limits.n_ctx - n));
    return true;
  } catch (const RequestError& e) {
    *err = e;
    return false;
  } catch (const std::exception& e) {
    err->message = std::string("bad request: ") + e.what();
    return false;
  }
}

}  // namespace brisk::serve
