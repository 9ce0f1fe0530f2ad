// SPDX-License-Identifier: MIT
#include "tokenizer/chat_template.h"

#include "core/error.h"

namespace brisk {

namespace {

bool has(std::string_view s, std::string_view sub) { return s.find(sub) != std::string_view::npos; }

// Python's str.strip() on ASCII whitespace, which the Llama templates apply.
std::string strip(const std::string& s) {
  const char* ws = " \t\n\r\v\f";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

std::string render_llama2(const std::vector<ChatMessage>& msgs) {
  // Meta's template: bos + "[INST] " + (system in <<SYS>> on the first user
  // turn) + user.strip() + " [/INST]", then " " + answer.strip() + " " + eos.
  std::string out, system;
  bool first_turn = true;
  for (const auto& m : msgs) {
    if (m.role == "system") {
      system = strip(m.content);
    } else if (m.role == "assistant") {
      out.append(" ").append(strip(m.content)).append(" </s>");
    } else {
      if (!first_turn) out += "<s>";  // the first BOS comes from the tokenizer
      out += "[INST] ";
      if (!system.empty()) {
        out.append("<<SYS>>\n").append(system).append("\n<</SYS>>\n\n");
        system.clear();
      }
      out.append(strip(m.content)).append(" [/INST]");
      first_turn = false;
    }
  }
  return out;
}

std::string render_mistral(const std::vector<ChatMessage>& msgs) {
  std::string out, system;
  for (const auto& m : msgs) {
    if (m.role == "system") {
      system = m.content;
    } else if (m.role == "assistant") {
      out.append(m.content).append("</s>");
    } else {
      out += "[INST] ";
      if (!system.empty()) {
        out.append(system).append("\n\n");
        system.clear();
      }
      out.append(m.content).append(" [/INST]");
    }
  }
  return out;
}

}  // namespace

void check_chat_messages(const Tokenizer& tok, const std::vector<ChatMessage>& msgs) {
  for (size_t i = 0; i < msgs.size(); ++i) {
    for (const auto& [field, text] : {std::pair<const char*, const std::string&>{"role", msgs[i].role},
                                      std::pair<const char*, const std::string&>{"content", msgs[i].content}}) {
      for (int32_t id : tok.encode(text, false, true)) {
        if (tok.token_type(id) != TokenType::CONTROL) continue;
        fail(BRISK_ERR_INVALID_ARGUMENT,
             "chat message " + std::to_string(i) + " (" + msgs[i].role.substr(0, 32) + ") has control-token text '" +
                 std::string(tok.token_text(id)) + "' in its " + field +
                 ", which would change the conversation's structure (allow it explicitly to render it as a token)");
      }
    }
  }
}

ChatFamily detect_chat_family(std::string_view t) {
  if (has(t, "<|im_start|>")) return ChatFamily::CHATML;
  if (has(t, "<|start_header_id|>") && has(t, "<|end_header_id|>")) return ChatFamily::LLAMA3;
  if (has(t, "<|user|>") && has(t, "<|end|>")) return ChatFamily::PHI3;
  if (has(t, "[INST]")) return has(t, "<<SYS>>") ? ChatFamily::LLAMA2 : ChatFamily::MISTRAL;
  return ChatFamily::UNKNOWN;
}

const char* chat_family_name(ChatFamily f) {
  switch (f) {
    case ChatFamily::LLAMA2: return "llama2";
    case ChatFamily::LLAMA3: return "llama3";
    case ChatFamily::CHATML: return "chatml";
    case ChatFamily::MISTRAL: return "mistral";
    case ChatFamily::PHI3: return "phi3";
    default: return "unknown";
  }
}

ChatFamily chat_family_from_name(std::string_view name) {
  for (ChatFamily f : {ChatFamily::LLAMA2, ChatFamily::LLAMA3, ChatFamily::CHATML, ChatFamily::MISTRAL, ChatFamily::PHI3})
    if (name == chat_family_name(f)) return f;
  return ChatFamily::UNKNOWN;
}

std::string render_chat(ChatFamily family, const std::vector<ChatMessage>& msgs, bool add_assistant_prompt) {
  std::string out;
  switch (family) {
    case ChatFamily::LLAMA2: return render_llama2(msgs);
    case ChatFamily::MISTRAL: return render_mistral(msgs);
    case ChatFamily::LLAMA3:
      for (const auto& m : msgs)
        out.append("<|start_header_id|>").append(m.role).append("<|end_header_id|>\n\n").append(strip(m.content)).append("<|eot_id|>");
      if (add_assistant_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      return out;
    case ChatFamily::CHATML:
      for (const auto& m : msgs) out.append("<|im_start|>").append(m.role).append("\n").append(m.content).append("<|im_end|>\n");
      if (add_assistant_prompt) out += "<|im_start|>assistant\n";
      return out;
    case ChatFamily::PHI3:
      for (const auto& m : msgs) out.append("<|").append(m.role).append("|>\n").append(m.content).append("<|end|>\n");
      if (add_assistant_prompt) out += "<|assistant|>\n";
      return out;
    default: break;
  }
  fail(BRISK_ERR_UNSUPPORTED, "chat template: unknown family (supported: llama2, llama3, chatml, mistral, phi3)");
}

}  // namespace brisk
