// SPDX-License-Identifier: MIT
// Reading a Hugging Face tokenizer.json (and its sibling tokenizer_config.json
// / config.json) into HfConfig, and into the VocabData a GGUF converter writes.
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/json_depth.h"
#include "tokenizer/hf.h"

namespace brisk::tok {

using nlohmann::json;

namespace {

[[noreturn]] void bad(const std::string& what) { fail(BRISK_ERR_BAD_FORMAT, "tokenizer.json: " + what); }
[[noreturn]] void unsupported(const std::string& what) { fail(BRISK_ERR_UNSUPPORTED, "tokenizer.json: " + what); }

// The largest published tokenizer.json files are a few tens of MB; the parsed
// document takes several times its text, so larger files are refused unread.
constexpr uintmax_t kMaxJsonFileBytes = uintmax_t(128) << 20;
// A tokenizer's ids are dense apart from a few holes (padded as convert_hf_to_gguf.py
// does); a larger id than this is a lie that would size the vocabulary.
constexpr int64_t kMaxIdSlack = 1 << 16;
constexpr int64_t kMaxVocab = int64_t{1} << 24;

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) fail(BRISK_ERR_NOT_FOUND, "cannot open " + p.string());
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(p, ec);
  if (!ec && size > kMaxJsonFileBytes)
    fail(BRISK_ERR_BAD_FORMAT, p.string() + " is " + std::to_string(size) + " bytes, above the " +
                                   std::to_string(kMaxJsonFileBytes >> 20) + " MiB limit for a JSON file");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

json parse_json(const std::string& text, const std::string& what) {
  check_json_depth(text, what);
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    fail(BRISK_ERR_BAD_FORMAT, what + ": invalid JSON: " + e.what());
  }
}

std::string str_or(const json& j, const char* key, const std::string& def = "") {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : def;
}
bool bool_or(const json& j, const char* key, bool def) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : def;
}

// A literal pattern as a PCRE2 regex.
std::string regex_quote(const std::string& s) {
  std::string r;
  for (char c : s) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || static_cast<unsigned char>(c) >= 0x80)
      r += c;
    else if (c == ' ')
      r += "\\x20";
    else
      r += '\\', r += c;
  }
  return r;
}

void parse_normalizer(const json& n, HfConfig& c) {
  if (n.is_null()) return;
  const std::string type = str_or(n, "type");
  if (type == "Sequence") {
    for (const auto& x : n.value("normalizers", json::array())) parse_normalizer(x, c);
  } else if (type == "Prepend") {
    c.normalizers.push_back({HfNormalizer::PREPEND, str_or(n, "prepend"), ""});
  } else if (type == "Replace") {
    const json& pat = n.value("pattern", json::object());
    if (!pat.contains("String")) unsupported("Replace normalizer with a regex pattern");
    c.normalizers.push_back({HfNormalizer::REPLACE, pat["String"].get<std::string>(), str_or(n, "content")});
  } else if (type == "NFC") {
    // Not applied, as llama.cpp does not apply it either: text already in
    // NFC (nearly all text) is unaffected.
  } else {
    unsupported("normalizer '" + type + "'");
  }
}

void parse_pre(const json& p, HfConfig& c) {
  if (p.is_null()) return;
  const std::string type = str_or(p, "type");
  HfPreTokenizer t{};
  if (type == "Sequence") {
    for (const auto& x : p.value("pretokenizers", json::array())) parse_pre(x, c);
    return;
  } else if (type == "Split") {
    const json& pat = p.value("pattern", json::object());
    if (pat.contains("Regex"))
      t.regex = pat["Regex"].get<std::string>();
    else if (pat.contains("String"))
      t.regex = regex_quote(pat["String"].get<std::string>());
    else
      bad("Split pre-tokenizer without a pattern");
    const std::string behavior = str_or(p, "behavior", "Isolated");
    if (behavior == "Removed")
      t.removed = true;
    else if (behavior != "Isolated")
      unsupported("Split behavior '" + behavior + "'");
    if (bool_or(p, "invert", false)) unsupported("Split with invert = true");
    t.kind = HfPreTokenizer::SPLIT;
  } else if (type == "ByteLevel") {
    t.kind = HfPreTokenizer::BYTE_LEVEL;
    t.add_prefix_space = bool_or(p, "add_prefix_space", true);
    t.use_regex = bool_or(p, "use_regex", true);
    c.byte_level = true;
  } else if (type == "Metaspace") {
    t.kind = HfPreTokenizer::METASPACE;
    t.replacement = str_or(p, "replacement", "\xE2\x96\x81");
    const std::string scheme = str_or(p, "prepend_scheme", bool_or(p, "add_prefix_space", true) ? "always" : "never");
    t.prepend = scheme == "never" ? HfPreTokenizer::NEVER : scheme == "first" ? HfPreTokenizer::FIRST : HfPreTokenizer::ALWAYS;
    t.split = bool_or(p, "split", true);
    c.space_marker = true;
    if (t.prepend != HfPreTokenizer::NEVER) c.prefix_space = true;
  } else {
    unsupported("pre-tokenizer '" + type + "'");
  }
  c.pre_tokenizers.push_back(std::move(t));
}

// The original (HF) regexes of the pre-tokenizers llama.cpp names.
const char* const kHfLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kHfQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

std::string guess_pre(const HfConfig& c) {
  std::vector<std::string> splits;
  bool gpt2_regex = false;
  for (const auto& p : c.pre_tokenizers) {
    if (p.kind == HfPreTokenizer::SPLIT) splits.push_back(p.regex);
    if (p.kind == HfPreTokenizer::BYTE_LEVEL && p.use_regex) gpt2_regex = true;
  }
  if (splits.empty()) return gpt2_regex ? "gpt-2" : "";
  if (splits.size() == 1 && splits[0] == kHfLlama3) return "llama-bpe";
  if (splits.size() == 1 && splits[0] == kHfQwen2) return "qwen2";
  if (splits.size() >= 2 && (splits[0] == "[\r\n]" || splits[0] == "[\\r\\n]")) {
    if (splits[1].rfind("\\s?[A-Za-z", 0) == 0) return "deepseek-llm";
    if (splits[1] == "\\s?\\p{L}+") return "deepseek-coder";
  }
  return "";
}

// Token text of a tokenizer_config.json entry: "<s>" or {"content": "<s>"}.
std::optional<std::string> token_name(const json& cfg, const char* key) {
  auto it = cfg.find(key);
  if (it == cfg.end()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) return (*it)["content"].get<std::string>();
  return std::nullopt;
}

}  // namespace

HfConfig parse_hf_impl(const std::string& path_or_text);

HfConfig parse_hf(const std::string& path_or_text) {
  // Any byte string is acceptable input (fuzzers feed JSON text here): a
  // value of the wrong JSON type anywhere is a format error, not a crash.
  try {
    return parse_hf_impl(path_or_text);
  } catch (const nlohmann::json::exception& e) {
    fail(BRISK_ERR_BAD_FORMAT, std::string("tokenizer.json: unexpected structure: ") + e.what());
  }
}

HfConfig parse_hf_impl(const std::string& path_or_text) {
  std::string text;
  std::filesystem::path dir;
  const size_t first = path_or_text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && path_or_text[first] == '{') {
    text = path_or_text;
  } else {
    std::filesystem::path p(path_or_text);
    if (std::filesystem::is_directory(p)) p /= "tokenizer.json";
    text = read_file(p);
    dir = p.parent_path();
  }
  const json j = parse_json(text, "tokenizer.json");
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object()) bad("no \"model\" object");
  const json& m = j["model"];
  const std::string mtype = str_or(m, "type", m.contains("merges") ? "BPE" : "");
  if (mtype != "BPE") unsupported("model type '" + mtype + "' (brisk implements BPE)");
  if (m.contains("dropout") && m["dropout"].is_number() && m["dropout"].get<double>() > 0) unsupported("BPE dropout");
  if (!str_or(m, "continuing_subword_prefix").empty() || !str_or(m, "end_of_word_suffix").empty())
    unsupported("BPE continuing_subword_prefix / end_of_word_suffix");

  HfConfig c;
  VocabData& d = c.vocab;
  // Tokens by id: the model's vocab, then the added tokens (which may extend it).
  std::map<int64_t, std::string> by_id;
  if (!m.contains("vocab") || !m["vocab"].is_object()) bad("model has no vocab object");
  for (auto it = m["vocab"].begin(); it != m["vocab"].end(); ++it) {
    if (!it.value().is_number_integer()) bad("vocab id of '" + it.key() + "' is not an integer");
    by_id[it.value().get<int64_t>()] = it.key();
  }
  std::map<int64_t, bool> added;  // id -> special
  for (const auto& a : j.value("added_tokens", json::array())) {
    if (!a.contains("id") || !a["id"].is_number_integer() || !a.contains("content")) bad("malformed added_tokens entry");
    const int64_t id = a["id"].get<int64_t>();
    by_id[id] = a["content"].get<std::string>();
    added[id] = bool_or(a, "special", false);
  }
  if (by_id.empty()) bad("empty vocabulary");
  const int64_t max_id = by_id.rbegin()->first;
  if (by_id.begin()->first < 0) bad("token id " + std::to_string(by_id.begin()->first) + " is negative");
  if (max_id >= kMaxVocab || max_id >= static_cast<int64_t>(by_id.size()) + kMaxIdSlack)
    bad("token id " + std::to_string(max_id) + " is out of range for a vocabulary of " +
        std::to_string(by_id.size()) + " tokens");
  const size_t n = static_cast<size_t>(by_id.rbegin()->first) + 1;

  c.byte_fallback = bool_or(m, "byte_fallback", false);
  c.ignore_merges = bool_or(m, "ignore_merges", false);
  c.fuse_unk = bool_or(m, "fuse_unk", false);
  const std::string unk = str_or(m, "unk_token");

  d.tokens.assign(n, "");
  d.token_types.assign(n, static_cast<int32_t>(TokenType::NORMAL));
  for (size_t i = 0; i < n; ++i) {
    auto it = by_id.find(static_cast<int64_t>(i));
    if (it == by_id.end()) {
      // A hole in the ids: padded as convert_hf_to_gguf.py does.
      d.tokens[i] = "[PAD" + std::to_string(i) + "]";
      d.token_types[i] = static_cast<int32_t>(TokenType::UNUSED);
      continue;
    }
    d.tokens[i] = it->second;
    const std::string& t = it->second;
    TokenType type = TokenType::NORMAL;
    if (auto a = added.find(it->first); a != added.end()) type = a->second ? TokenType::CONTROL : TokenType::USER_DEFINED;
    if (c.byte_fallback && t.size() == 6 && t.rfind("<0x", 0) == 0 && t[5] == '>') type = TokenType::BYTE;
    if (!unk.empty() && t == unk) {
      type = TokenType::UNKNOWN;
      c.unk_id = static_cast<int32_t>(i);
    }
    d.token_types[i] = static_cast<int32_t>(type);
  }

  // Merges: "a b" strings or [a, b] pairs.
  for (const auto& mg : m.value("merges", json::array())) {
    std::string a, b;
    if (mg.is_string()) {
      const std::string s = mg.get<std::string>();
      const size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos) bad("merge '" + s + "' is not 'a b'");
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else if (mg.is_array() && mg.size() == 2 && mg[0].is_string() && mg[1].is_string()) {
      a = mg[0].get<std::string>();
      b = mg[1].get<std::string>();
    } else {
      bad("merge entry is neither \"a b\" nor [a, b]");
    }
    d.merges.push_back(a + " " + b);
    c.merge_pairs.emplace_back(std::move(a), std::move(b));
  }

  parse_normalizer(j.contains("normalizer") ? j["normalizer"] : json(), c);
  parse_pre(j.contains("pre_tokenizer") ? j["pre_tokenizer"] : json(), c);
  for (const auto& nz : c.normalizers) {
    if (nz.kind == HfNormalizer::PREPEND) c.prefix_space = true;
    if (nz.kind == HfNormalizer::REPLACE && nz.a == " " && nz.b == "\xE2\x96\x81") c.space_marker = true;
  }
  if (j.contains("decoder") && j["decoder"].dump().find("\"ByteLevel\"") != std::string::npos) c.byte_level = true;

  auto id_of = [&](const std::string& t) -> std::optional<int32_t> {
    for (const auto& [id, s] : by_id)
      if (s == t) return static_cast<int32_t>(id);
    return std::nullopt;
  };
  // BOS/EOS from the post-processor template ("<s> $A" adds BOS).
  d.add_bos = false;
  d.add_eos = false;
  if (j.contains("post_processor") && j["post_processor"].is_object()) {
    json pp = j["post_processor"];
    if (str_or(pp, "type") == "Sequence")
      for (const auto& x : pp.value("processors", json::array()))
        if (str_or(x, "type") == "TemplateProcessing") pp = x;
    if (str_or(pp, "type") == "TemplateProcessing") {
      const json single = pp.value("single", json::array());
      for (size_t i = 0; i < single.size(); ++i) {
        if (!single[i].contains("SpecialToken")) continue;
        const std::string name = str_or(single[i]["SpecialToken"], "id");
        auto id = id_of(name);
        if (!id) continue;
        if (i == 0) {
          d.add_bos = true;
          d.bos_id = *id;
        } else {
          d.add_eos = true;
          d.eos_id = *id;
        }
      }
    }
  }
  if (c.unk_id >= 0) d.unk_id = c.unk_id;

  // Sibling files, as gguf-py's SpecialVocab reads them.
  if (!dir.empty() && std::filesystem::exists(dir / "tokenizer_config.json")) {
    const json cfg = parse_json(read_file(dir / "tokenizer_config.json"), "tokenizer_config.json");
    if (cfg.contains("add_bos_token") && cfg["add_bos_token"].is_boolean()) d.add_bos = cfg["add_bos_token"].get<bool>();
    if (cfg.contains("add_eos_token") && cfg["add_eos_token"].is_boolean()) d.add_eos = cfg["add_eos_token"].get<bool>();
    auto set = [&](const char* key, std::optional<int32_t>& slot) {
      if (auto name = token_name(cfg, key))
        if (auto id = id_of(*name)) slot = *id;
    };
    set("bos_token", d.bos_id);
    set("eos_token", d.eos_id);
    set("unk_token", d.unk_id);
    set("pad_token", d.pad_id);
    if (cfg.contains("chat_template")) {
      const json& ct = cfg["chat_template"];
      if (ct.is_string()) d.chat_template = ct.get<std::string>();
      if (ct.is_array())
        for (const auto& t : ct)
          if (str_or(t, "name") == "default") d.chat_template = str_or(t, "template");
    }
  }
  if (!dir.empty() && std::filesystem::exists(dir / "config.json")) {
    const json cfg = parse_json(read_file(dir / "config.json"), "config.json");
    auto set = [&](const char* key, std::optional<int32_t>& slot) {
      if (slot) return;
      auto it = cfg.find(key);
      if (it == cfg.end()) return;
      if (it->is_number_integer()) slot = it->get<int32_t>();
      if (it->is_array() && !it->empty() && (*it)[0].is_number_integer()) slot = (*it)[0].get<int32_t>();
    };
    set("bos_token_id", d.bos_id);
    set("eos_token_id", d.eos_id);
  }
  if (!d.eos_id) {
    for (const char* t : {"</s>", "<|end_of_text|>", "<|endoftext|>", "<|im_end|>"})
      if (auto id = id_of(t)) {
        d.eos_id = *id;
        break;
      }
  }

  // What a GGUF converter would call this tokenizer.
  if (c.byte_level) {
    d.model = "gpt2";
    d.pre = guess_pre(c);
  } else {
    d.model = "llama";
    d.add_space_prefix = c.prefix_space;
    // SentencePiece merges by piece score; HF by merge rank. A piece's score
    // is minus the rank of the first merge producing it, so both orders agree.
    // Pieces no merge produces get the lowest score (llama.cpp gives such
    // user-defined/whitespace pieces -1e9 too); bytes and specials 0.
    d.scores.assign(n, -1e9f);
    for (size_t i = 0; i < n; ++i)
      if (d.token_types[i] != static_cast<int32_t>(TokenType::NORMAL)) d.scores[i] = 0.0f;
    std::map<std::string, int32_t> produced;
    for (size_t r = 0; r < c.merge_pairs.size(); ++r)
      produced.emplace(c.merge_pairs[r].first + c.merge_pairs[r].second, static_cast<int32_t>(r));
    for (size_t i = 0; i < n; ++i)
      if (auto it = produced.find(d.tokens[i]); it != produced.end()) d.scores[i] = -static_cast<float>(it->second);
  }
  return c;
}

}  // namespace brisk::tok

namespace brisk {

VocabData load_hf_vocab(const std::string& path_or_text) {
  tok::HfConfig c = tok::parse_hf(path_or_text);
  if (c.vocab.model == "gpt2" && c.vocab.pre.empty())
    fail(BRISK_ERR_UNSUPPORTED,
         "tokenizer.json: byte-level BPE with a pre-tokenizer brisk cannot name for tokenizer.ggml.pre "
         "(known: GPT-2, Llama 3, Qwen2, DeepSeek LLM/Coder regexes)");
  return std::move(c.vocab);
}

}  // namespace brisk
