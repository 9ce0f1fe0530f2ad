// SPDX-License-Identifier: MIT
// The interactive part of `brisk run --chat`: read a user turn per line,
// render the whole conversation with the model's chat template, evaluate only
// what the session has not seen yet, and stream the reply. When the history
// outgrows the context, the oldest turns (never the system prompt) are dropped.
#include "chat.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "common.h"

namespace brisk::tools {

namespace {

struct Turn {
  std::string role, content;
};

int collect(void* ud, int32_t, const char* text, size_t len) {
  std::fwrite(text, 1, len, stdout);
  std::fflush(stdout);
  static_cast<std::string*>(ud)->append(text, len);
  return 0;
}

// Tokens of the rendered conversation, or false with an error printed.
bool render_tokens(brisk_model* model, const char* tmpl, const std::vector<Turn>& turns, std::vector<int32_t>* out) {
  std::vector<const char*> roles, contents;
  for (const Turn& t : turns) {
    roles.push_back(t.role.c_str());
    contents.push_back(t.content.c_str());
  }
  size_t needed = 0;
  brisk_status st = brisk_chat_render(model, tmpl, roles.data(), contents.data(), turns.size(), 1, nullptr, 0, &needed);
  if (st != BRISK_OK && st != BRISK_ERR_BUFFER_TOO_SMALL) return report("run", st), false;
  std::string text(needed, '\0');
  if ((st = brisk_chat_render(model, tmpl, roles.data(), contents.data(), turns.size(), 1, text.data(), text.size(),
                              &needed)) != BRISK_OK)
    return report("run", st), false;
  text.resize(needed - 1);
  const uint32_t flags = BRISK_TOKENIZE_ADD_BOS | BRISK_TOKENIZE_PARSE_SPECIAL;
  st = brisk_tokenize(model, text.data(), text.size(), flags, nullptr, 0, &needed);
  if (st != BRISK_OK && st != BRISK_ERR_BUFFER_TOO_SMALL) return report("run", st), false;
  out->resize(needed);
  if ((st = brisk_tokenize(model, text.data(), text.size(), flags, out->data(), out->size(), &needed)) != BRISK_OK)
    return report("run", st), false;
  return true;
}

}  // namespace

int run_chat(brisk_model* model, brisk_session* session, brisk_sampler* sampler, const ChatSettings& cs) {
  std::vector<Turn> turns;
  if (!cs.system_prompt.empty()) turns.push_back({"system", cs.system_prompt});
  std::vector<int32_t> seen;  // tokens the session holds, in order
  const char* tmpl = cs.template_name.empty() ? nullptr : cs.template_name.c_str();
  const size_t n_ctx = brisk_session_n_ctx(session);
  std::string line;
  while (true) {
    std::fprintf(stderr, "\n> ");
    std::fflush(stderr);
    if (!std::getline(std::cin, line)) break;
    if (line.empty()) continue;
    turns.push_back({"user", line});
    std::vector<int32_t> tokens;
    if (!render_tokens(model, tmpl, turns, &tokens)) {
      // A message the renderer refuses (control-token text) is dropped, with
      // the error printed; the conversation goes on.
      turns.pop_back();
      continue;
    }
    // Keep the reply's room free: drop the oldest exchanges until it fits.
    while (tokens.size() + static_cast<size_t>(cs.n_predict) > n_ctx) {
      auto first = std::find_if(turns.begin(), turns.end(), [](const Turn& t) { return t.role != "system"; });
      if (turns.end() - first <= 1) {
        std::fprintf(stderr, "brisk run: error: this message alone does not fit the context of %zu tokens\n", n_ctx);
        turns.pop_back();
        tokens.clear();
        break;
      }
      turns.erase(first);
      if (!render_tokens(model, tmpl, turns, &tokens)) return 1;
    }
    if (tokens.empty()) continue;
    // Evaluate only past the prefix the session already holds.
    size_t common = 0;
    while (common < seen.size() && common < tokens.size() && seen[common] == tokens[common]) ++common;
    if (common == tokens.size()) --common;  // at least one token, for fresh logits
    brisk_status st = brisk_session_truncate(session, static_cast<uint32_t>(common));
    if (st == BRISK_OK) st = brisk_session_eval(session, tokens.data() + common, tokens.size() - common);
    if (st != BRISK_OK) return report("run", st);
    seen = tokens;
    for (size_t i = common; i < tokens.size(); ++i) brisk_sampler_accept(sampler, tokens[i]);

    std::string reply;
    brisk_generate_options go;
    brisk_generate_options_init(&go);
    go.max_tokens = cs.n_predict;
    go.token_fn = collect;
    go.token_user_data = &reply;
    size_t n_gen = 0;
    st = brisk_generate(session, sampler, &go, &n_gen, nullptr);
    std::printf("\n");
    std::fflush(stdout);
    if (st == BRISK_ERR_CANCELLED) break;
    if (st != BRISK_OK) return report("run", st);
    // The session now holds the generated tokens too, but not necessarily as
    // the template will render them: the next turn's prefix check sorts it out.
    seen.resize(brisk_session_position(session) < seen.size() ? brisk_session_position(session) : seen.size());
    turns.push_back({"assistant", reply});
  }
  return 0;
}

}  // namespace brisk::tools
