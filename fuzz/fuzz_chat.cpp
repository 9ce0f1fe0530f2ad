// SPDX-License-Identifier: MIT
// brisk_chat_render through the C API with fuzzed template names, model
// templates (tokenizer.chat_template), roles and contents, then the
// rendered prompt tokenized as the docs say (ADD_BOS | PARSE_SPECIAL) with a
// vocabulary that has every family's control tokens.
// Input: [flags] part0 '\0' role '\0' content '\0' role '\0' content ...
// flags & 7: 0-4 the template names, 5 the model's template = part0,
// 6 template name = part0, 7 no name and a model without a template;
// flags & 8: add_assistant.
#include <cstring>
#include <string>
#include <vector>

#include "brisk/brisk.h"
#include "fuzz_util.h"

namespace {

void put_u32(std::string& s, uint32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); }
void put_u64(std::string& s, uint64_t v) { s.append(reinterpret_cast<const char*>(&v), 8); }
void put_str(std::string& s, std::string_view v) {
  put_u64(s, v.size());
  s.append(v);
}

// A vocabulary-only GGUF (no tensors): SentencePiece-style tokens with the
// control tokens of every chat family, and an optional chat template.
std::string vocab_gguf(const std::string* chat_template) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};
  for (const char* c : {"<|im_start|>", "<|im_end|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>",
                        "<|system|>", "<|user|>", "<|assistant|>", "<|end|>", "[INST]", "[/INST]"}) {
    tokens.push_back(c);
    types.push_back(3);
  }
  char hex[8];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(hex, sizeof hex, "<0x%02X>", b);
    tokens.push_back(hex);
    types.push_back(6);
  }
  tokens.push_back("\xE2\x96\x81");
  types.push_back(1);
  for (char c = 'a'; c <= 'z'; ++c) {
    tokens.push_back(std::string(1, c));
    tokens.push_back("\xE2\x96\x81" + std::string(1, c));
    types.push_back(1);
    types.push_back(1);
  }
  std::string kv;
  uint64_t n_kv = 0;
  auto key = [&](const char* k, uint32_t type) {
    put_str(kv, k);
    put_u32(kv, type);
    ++n_kv;
  };
  key("general.architecture", 8);
  put_str(kv, "llama");
  key("tokenizer.ggml.model", 8);
  put_str(kv, "llama");
  key("tokenizer.ggml.tokens", 9);
  put_u32(kv, 8);
  put_u64(kv, tokens.size());
  for (const auto& t : tokens) put_str(kv, t);
  key("tokenizer.ggml.token_type", 9);
  put_u32(kv, 5);
  put_u64(kv, types.size());
  kv.append(reinterpret_cast<const char*>(types.data()), types.size() * 4);
  key("tokenizer.ggml.bos_token_id", 4);
  put_u32(kv, 1);
  key("tokenizer.ggml.eos_token_id", 4);
  put_u32(kv, 2);
  if (chat_template) {
    key("tokenizer.chat_template", 8);
    put_str(kv, *chat_template);
  }
  std::string f = "GGUF";
  put_u32(f, 3);
  put_u64(f, 0);  // tensors
  put_u64(f, n_kv);
  return f + kv;
}

brisk_model* open_vocab(const std::string& gguf, int slot) {
  const std::string path = brisk::fuzz::as_file(gguf, slot);
  brisk_model_options o;
  brisk_model_options_init(&o);
  o.vocab_only = 1;
  brisk_model* m = nullptr;
  if (brisk_model_open(path.c_str(), &o, &m) != BRISK_OK) return nullptr;
  return m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace brisk;
  static brisk_model* plain = open_vocab(vocab_gguf(nullptr), 1);
  if (!plain) fuzz::finding("the built-in vocabulary does not open");
  if (size < 1) return 0;
  const uint8_t flags = data[0];
  const auto parts = fuzz::split_input(data + 1, size - 1, 65);
  const std::string part0(parts[0]);
  static const char* const kNames[] = {"llama2", "llama3", "chatml", "mistral", "phi3"};
  const char* name = nullptr;
  brisk_model* m = plain;
  brisk_model* own = nullptr;
  switch (flags & 7) {
    case 5:
      own = m = open_vocab(vocab_gguf(&part0), 0);
      if (!m) return 0;  // refused (e.g. a reader that checks UTF-8): nothing to render
      break;
    case 6:
      name = part0.c_str();
      break;
    case 7:
      break;
    default:
      name = kNames[flags & 7];
  }
  std::vector<std::string> strs(parts.begin() + 1, parts.end());
  if (strs.size() % 2) strs.emplace_back();
  std::vector<const char*> roles, contents;
  for (size_t i = 0; i < strs.size(); i += 2) {
    roles.push_back(strs[i].c_str());
    contents.push_back(strs[i + 1].c_str());
  }
  const int32_t add_assistant = (flags & 8) != 0;
  size_t needed = 0;
  const brisk_status st =
      brisk_chat_render(m, name, roles.data(), contents.data(), roles.size(), add_assistant, nullptr, 0, &needed);
  if (st == BRISK_OK || st == BRISK_ERR_BUFFER_TOO_SMALL) {
    std::vector<char> buf(needed);
    size_t again = 0;
    if (brisk_chat_render(m, name, roles.data(), contents.data(), roles.size(), add_assistant, buf.data(), buf.size(),
                          &again) != BRISK_OK ||
        again != needed)
      fuzz::finding("chat_render did not fit the size it asked for");
    if (buf.empty() || buf.back() != '\0') fuzz::finding("chat_render output not NUL-terminated");
    const size_t len = buf.size() - 1;
    size_t n_tok = 0;
    const uint32_t tflags = BRISK_TOKENIZE_ADD_BOS | BRISK_TOKENIZE_PARSE_SPECIAL;
    const brisk_status ts = brisk_tokenize(m, buf.data(), len, tflags, nullptr, 0, &n_tok);
    if (ts == BRISK_OK || ts == BRISK_ERR_BUFFER_TOO_SMALL) {
      std::vector<int32_t> toks(n_tok);
      if (brisk_tokenize(m, buf.data(), len, tflags, toks.data(), toks.size(), &n_tok) != BRISK_OK)
        fuzz::finding("tokenize did not fit the size it asked for");
      const int32_t n_vocab = brisk_model_n_vocab(m);
      for (int32_t t : toks)
        if (t < 0 || t >= n_vocab) fuzz::finding("tokenize gave an id out of range");
    }
  }
  brisk_model_close(own);
  return 0;
}
