// SPDX-License-Identifier: MIT
#include "converters/hf_files.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <system_error>

#include "core/error.h"
#include "core/json_depth.h"

namespace brisk::convert {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::optional<std::string> read_small_file(const fs::path& p, uint64_t max_bytes) {
  std::error_code ec;
  if (!fs::exists(p, ec)) return std::nullopt;
  if (!fs::is_regular_file(p, ec)) fail(BRISK_ERR_INVALID_ARGUMENT, "'" + p.string() + "' is not a regular file");
  const uint64_t size = fs::file_size(p, ec);
  if (ec) fail(BRISK_ERR_IO, "cannot read '" + p.string() + "': " + ec.message());
  if (size > max_bytes) fail(BRISK_ERR_BAD_FORMAT, "'" + p.string() + "' is " + std::to_string(size) + " bytes, too large");
  std::ifstream in(p, std::ios::binary);
  std::string s(static_cast<size_t>(size), '\0');
  if (!in.read(s.data(), static_cast<std::streamsize>(s.size())))
    fail(BRISK_ERR_IO, "cannot read '" + p.string() + "'");
  return s;
}

namespace {

// "<s>" or {"content": "<s>", ...}: the text of a special token entry.
std::optional<std::string> token_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object())
    if (auto c = v.find("content"); c != v.end() && c->is_string()) return c->get<std::string>();
  return std::nullopt;
}

std::optional<int32_t> find_token(const VocabData& v, const std::string& text) {
  for (size_t i = 0; i < v.tokens.size(); ++i)
    if (v.tokens[i] == text) return static_cast<int32_t>(i);
  return std::nullopt;
}

std::optional<json> parse_object(const std::optional<std::string>& text) {
  if (!text || json_nesting_depth(*text) > kMaxJsonDepth) return std::nullopt;
  json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

void set_id(std::optional<int32_t>& slot, std::optional<int64_t> id, size_t n_tokens) {
  if (!slot && id && *id >= 0 && static_cast<size_t>(*id) < n_tokens) slot = static_cast<int32_t>(*id);
}

}  // namespace

void apply_hf_special_tokens(VocabData& v, const std::optional<std::string>& tokenizer_config,
                             const std::optional<std::string>& generation_config, std::optional<int64_t> config_bos,
                             std::optional<int64_t> config_eos) {
  if (tokenizer_config) check_json_depth(*tokenizer_config, "tokenizer_config.json");
  if (generation_config) check_json_depth(*generation_config, "generation_config.json");
  if (tokenizer_config && !parse_object(tokenizer_config))
    fail(BRISK_ERR_BAD_FORMAT, "tokenizer_config.json is not a valid JSON object");
  if (auto tc = parse_object(tokenizer_config)) {
    for (const auto& [key, slot] : {std::pair{"add_bos_token", &v.add_bos}, std::pair{"add_eos_token", &v.add_eos}})
      if (auto it = tc->find(key); it != tc->end() && it->is_boolean()) *slot = it->get<bool>();
    const std::pair<const char*, std::optional<int32_t>*> specials[] = {
        {"bos_token", &v.bos_id}, {"eos_token", &v.eos_id}, {"unk_token", &v.unk_id}, {"pad_token", &v.pad_id}};
    for (const auto& [key, slot] : specials)
      if (auto it = tc->find(key); it != tc->end())
        if (auto text = token_text(*it))
          if (auto id = find_token(v, *text)) *slot = id;
    if (auto ct = tc->find("chat_template"); ct != tc->end()) {
      if (ct->is_string()) {
        v.chat_template = ct->get<std::string>();
      } else if (ct->is_array()) {
        // Named templates: llama.cpp keeps "default" as tokenizer.chat_template.
        for (const json& e : *ct)
          if (e.is_object() && e.value("name", json()) == "default" && e.value("template", json()).is_string())
            v.chat_template = e["template"].get<std::string>();
      }
    }
  }
  // config.json, then generation_config.json, for ids still unknown.
  set_id(v.bos_id, config_bos, v.tokens.size());
  set_id(v.eos_id, config_eos, v.tokens.size());
  if (auto gc = parse_object(generation_config)) {
    for (const auto& [key, slot] : {std::pair{"bos_token_id", &v.bos_id}, std::pair{"eos_token_id", &v.eos_id}}) {
      auto it = gc->find(key);
      if (it == gc->end()) continue;
      const json& x = it->is_array() && !it->empty() ? (*it)[0] : *it;
      if (x.is_number_integer()) set_id(*slot, x.get<int64_t>(), v.tokens.size());
    }
  }
}

VocabData load_hf_directory_vocab(const fs::path& dir, int64_t n_vocab, std::optional<int64_t> config_bos,
                                  std::optional<int64_t> config_eos) {
  const fs::path tj = dir / "tokenizer.json";
  if (!fs::exists(tj))
    fail(BRISK_ERR_NOT_FOUND, "no tokenizer.json in '" + dir.string() +
                                  "' (a SentencePiece tokenizer.model alone is not supported)");
  // load_hf_vocab reads JSON text when its argument starts with '{'.
  std::string tj_path = tj.string();
  if (tj_path[0] == '{') tj_path = "./" + tj_path;
  VocabData v = load_hf_vocab(tj_path);
  auto tc = read_small_file(dir / "tokenizer_config.json");
  apply_hf_special_tokens(v, tc, read_small_file(dir / "generation_config.json"), config_bos, config_eos);
  if (v.chat_template.empty()) {
    if (auto jinja = read_small_file(dir / "chat_template.jinja")) {
      v.chat_template = *jinja;
    } else if (auto cj = read_small_file(dir / "chat_template.json")) {
      check_json_depth(*cj, "chat_template.json");
      json j = json::parse(*cj, nullptr, false);
      if (j.is_object() && j.contains("chat_template") && j["chat_template"].is_string())
        v.chat_template = j["chat_template"].get<std::string>();
    }
  }
  if (static_cast<int64_t>(v.tokens.size()) > n_vocab)
    fail(BRISK_ERR_BAD_FORMAT, "tokenizer.json has " + std::to_string(v.tokens.size()) + " tokens but the model's "
                                   "embedding has only " + std::to_string(n_vocab) + " rows");
  // Models often round their embedding up (to a multiple of 64 or 128):
  // llama.cpp fills the gap with unused placeholder tokens.
  for (int64_t i = static_cast<int64_t>(v.tokens.size()); i < n_vocab; ++i) {
    v.tokens.push_back("[PAD" + std::to_string(i) + "]");
    if (!v.scores.empty()) v.scores.push_back(0.0f);
    if (v.token_types.empty()) v.token_types.assign(v.tokens.size() - 1, static_cast<int32_t>(TokenType::NORMAL));
    v.token_types.push_back(static_cast<int32_t>(TokenType::UNUSED));
  }
  return v;
}

}  // namespace brisk::convert
