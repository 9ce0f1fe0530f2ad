// SPDX-License-Identifier: MIT
#include "cmd_batch_records.h"

#include <cmath>

namespace brisk::tools::batch {

namespace {

std::string last_error(const char* what, brisk_status st) {
  return std::string(what) + ": " + brisk_last_error() + " (" + brisk_status_name(st) + ")";
}

bool tokenize(const brisk_model* model, const std::string& text, uint32_t flags, std::vector<int32_t>* out,
              std::string* error) {
  size_t needed = 0;
  brisk_status st = brisk_tokenize(model, text.data(), text.size(), flags, nullptr, 0, &needed);
  if (st != BRISK_OK && st != BRISK_ERR_BUFFER_TOO_SMALL) {
    *error = last_error("tokenizing", st);
    return false;
  }
  out->resize(needed);
  st = brisk_tokenize(model, text.data(), text.size(), flags, out->data(), out->size(), &needed);
  if (st != BRISK_OK) {
    *error = last_error("tokenizing", st);
    return false;
  }
  return true;
}

// The conversation of a chat record: messages, with the system prompt first.
bool chat_text(const brisk_model* model, const Defaults& d, const nlohmann::json& j, std::string* out,
               std::string* error) {
  std::vector<std::string> roles, contents;
  const std::string system = j.contains("system") ? j["system"].get<std::string>() : d.system;
  if (j.contains("messages")) {
    const nlohmann::json& m = j["messages"];
    if (!m.is_array() || m.empty()) {
      *error = "\"messages\" must be a non-empty array";
      return false;
    }
    for (const auto& msg : m) {
      if (!msg.is_object() || !msg.contains("role") || !msg["role"].is_string() || !msg.contains("content") ||
          !msg["content"].is_string()) {
        *error = "each message needs string \"role\" and \"content\" fields";
        return false;
      }
      roles.push_back(msg["role"].get<std::string>());
      contents.push_back(msg["content"].get<std::string>());
    }
  } else {
    roles.push_back("user");
    contents.push_back(j["prompt"].get<std::string>());
  }
  if (!system.empty() && roles.front() != "system") {
    roles.insert(roles.begin(), "system");
    contents.insert(contents.begin(), system);
  }
  std::vector<const char*> r, c;
  for (size_t i = 0; i < roles.size(); ++i) {
    r.push_back(roles[i].c_str());
    c.push_back(contents[i].c_str());
  }
  const char* tmpl = d.chat_template.empty() ? nullptr : d.chat_template.c_str();
  size_t needed = 0;
  brisk_status st = brisk_chat_render(model, tmpl, r.data(), c.data(), r.size(), 1, nullptr, 0, &needed);
  if (st != BRISK_OK && st != BRISK_ERR_BUFFER_TOO_SMALL) {
    *error = last_error("chat template", st);
    return false;
  }
  std::string buf(needed, '\0');
  if ((st = brisk_chat_render(model, tmpl, r.data(), c.data(), r.size(), 1, buf.data(), buf.size(), &needed)) !=
      BRISK_OK) {
    *error = last_error("chat template", st);
    return false;
  }
  buf.resize(needed ? needed - 1 : 0);
  *out = std::move(buf);
  return true;
}

// Fills the request from the parsed line; false with r->error set otherwise.
bool parse(const brisk_model* model, const Defaults& d, const nlohmann::json& j, Request* r) {
  if (!j.is_object()) return r->error = "the line is not a JSON object", false;
  if (!j.contains("id") || !(j["id"].is_string() || j["id"].is_number()))
    return r->error = "no \"id\" (a string or a number)", false;
  r->id = j["id"];
  const bool has_prompt = j.contains("prompt"), has_messages = j.contains("messages");
  if (has_prompt == has_messages) return r->error = "give either \"prompt\" or \"messages\"", false;
  if (has_prompt && !j["prompt"].is_string()) return r->error = "\"prompt\" must be a string", false;
  if (j.contains("system") && !j["system"].is_string()) return r->error = "\"system\" must be a string", false;
  if (j.contains("max_tokens")) {
    if (!j["max_tokens"].is_number_integer() || j["max_tokens"].get<int64_t>() < 0 ||
        j["max_tokens"].get<int64_t>() > (1 << 24))
      return r->error = "\"max_tokens\" must be an integer from 0 to 16777216", false;
    r->max_tokens = j["max_tokens"].get<int>();
  }
  if (j.contains("temperature")) {
    if (!j["temperature"].is_number() || !std::isfinite(j["temperature"].get<double>()) ||
        j["temperature"].get<double>() < 0)
      return r->error = "\"temperature\" must be a number >= 0", false;
    r->sampling.temperature = j["temperature"].get<float>();
  }
  if (j.contains("seed")) {
    if (!j["seed"].is_number_unsigned()) return r->error = "\"seed\" must be a non-negative integer", false;
    r->sampling.seed = j["seed"].get<uint64_t>();
  }
  if (j.contains("stop")) {
    const nlohmann::json& s = j["stop"];
    if (s.is_string()) {
      r->stop.push_back(s.get<std::string>());
    } else if (s.is_array()) {
      for (const auto& e : s) {
        if (!e.is_string()) return r->error = "\"stop\" must be a string or an array of strings", false;
        r->stop.push_back(e.get<std::string>());
      }
    } else {
      return r->error = "\"stop\" must be a string or an array of strings", false;
    }
    for (const std::string& e : r->stop)
      if (e.empty()) return r->error = "a \"stop\" string is empty", false;
  }
  // A plain prompt is tokenized as `brisk run -p` does; a conversation (or
  // a prompt with a system prompt) goes through the chat template.
  const bool chat = has_messages || j.contains("system") || !d.system.empty();
  std::string text;
  uint32_t flags = BRISK_TOKENIZE_ADD_BOS;
  if (chat) {
    if (!chat_text(model, d, j, &text, &r->error)) return false;
    flags |= BRISK_TOKENIZE_PARSE_SPECIAL;
  } else {
    text = j["prompt"].get<std::string>();
  }
  if (!tokenize(model, text, flags, &r->tokens, &r->error)) return false;
  if (r->tokens.empty()) return r->error = "the prompt is empty and the model adds no BOS token", false;
  if (r->tokens.size() >= d.n_ctx)
    return r->error = "the prompt is too long: " + std::to_string(r->tokens.size()) + " tokens, the context holds " +
                      std::to_string(d.n_ctx) + " (use -c to enlarge it)",
           false;
  return true;
}

}  // namespace

Request prepare(const brisk_model* model, const Defaults& d, uint64_t index, const std::string& line) {
  Request r;
  r.index = index;
  r.max_tokens = d.max_tokens;
  r.sampling = d.sampling;
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded()) {
    r.error = "the line is not valid JSON";
    return r;
  }
  try {
    if (!parse(model, d, j, &r)) r.tokens.clear();
  } catch (const std::exception& e) {  // a type error in a field the checks above let through
    r.error = std::string("bad record: ") + e.what();
    r.tokens.clear();
  }
  return r;
}

std::string result_line(const Request& r, const std::string& text, size_t completion_tokens,
                        const char* finish_reason) {
  nlohmann::ordered_json j;
  j["index"] = r.index;
  j["id"] = r.id;
  j["text"] = text;
  j["prompt_tokens"] = r.tokens.size();
  j["completion_tokens"] = completion_tokens;
  j["finish_reason"] = finish_reason;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string error_line(const Request& r) {
  nlohmann::ordered_json j;
  j["index"] = r.index;
  j["id"] = r.id;
  j["error"] = r.error;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace brisk::tools::batch
