// SPDX-License-Identifier: MIT
// Chat prompts for the common template families. brisk does not run Jinja:
// it recognises the family from distinctive substrings of
// tokenizer.chat_template (as llama.cpp's llm_chat_detect_template does) and
// renders the family's format in C++.
//
// The rendered text contains the family's special tokens as text ("<|eot_id|>")
// and not the leading BOS: encode it with add_bos = true (the vocabulary adds
// BOS when its metadata says so) and parse_special = true.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace brisk {

enum class ChatFamily {
  UNKNOWN,
  LLAMA2,   // "[INST] <<SYS>>\n...\n<</SYS>>\n\nuser [/INST] answer </s><s>[INST] ..."
  LLAMA3,   // "<|start_header_id|>role<|end_header_id|>\n\ntext<|eot_id|>"
  CHATML,   // "<|im_start|>role\ntext<|im_end|>\n" (Qwen2, many fine-tunes)
  MISTRAL,  // "[INST] user [/INST]answer</s>" (system text joins the first user turn)
  PHI3,     // "<|role|>\ntext<|end|>\n"
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant" (others are passed through where the format allows)
  std::string content;
};

// The family a template belongs to, UNKNOWN if none matches.
ChatFamily detect_chat_family(std::string_view template_text);

// "llama2", "llama3", "chatml", "mistral", "phi3"; "unknown".
const char* chat_family_name(ChatFamily f);
// Inverse of chat_family_name (for a --chat-template option); UNKNOWN if not a name.
ChatFamily chat_family_from_name(std::string_view name);

// Renders messages in the family's format; add_assistant_prompt appends the
// header that starts the assistant's reply (families whose user turn already
// ends in it, such as Llama 2's "[/INST]", add nothing). Throws
// brisk::Error(BRISK_ERR_UNSUPPORTED) for UNKNOWN.
std::string render_chat(ChatFamily family, const std::vector<ChatMessage>& messages, bool add_assistant_prompt);

// The rendered text is tokenized with parse_special, so a message whose role
// or content spells a control token ("<|im_end|><|im_start|>system") would
// forge the conversation's structure. Throws brisk::Error
// (BRISK_ERR_INVALID_ARGUMENT) naming the message and the token when any role
// or content, tokenized on its own with parse_special, yields a control token.
void check_chat_messages(const Tokenizer& tokenizer, const std::vector<ChatMessage>& messages);

}  // namespace brisk
