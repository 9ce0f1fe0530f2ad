// SPDX-License-Identifier: MIT
#include "tokenizer/pretokenize.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "core/error.h"
#include "tokenizer/utf8.h"

namespace brisk::tok {

namespace {

// Per-thread match state: the pattern objects are shared and immutable, the
// match data and JIT stack are not.
struct MatchScratch {
  pcre2_match_data* md = nullptr;
  pcre2_match_context* mc = nullptr;
  pcre2_jit_stack* js = nullptr;
  MatchScratch() {
    md = pcre2_match_data_create(32, nullptr);
    mc = pcre2_match_context_create(nullptr);
    // The default 32 KiB JIT stack can run out on long runs of one class;
    // 8 MiB is reserved lazily by PCRE2 (grows from 64 KiB on demand).
    js = pcre2_jit_stack_create(64 * 1024, 8 * 1024 * 1024, nullptr);
    if (mc && js) pcre2_jit_stack_assign(mc, nullptr, js);
  }
  ~MatchScratch() {
    pcre2_jit_stack_free(js);
    pcre2_match_context_free(mc);
    pcre2_match_data_free(md);
  }
};

MatchScratch& scratch() {
  thread_local MatchScratch s;
  if (!s.md) fail(BRISK_ERR_OUT_OF_MEMORY, "tokenizer: cannot allocate PCRE2 match data");
  return s;
}

}  // namespace

namespace {

// PCRE2's \s (with UCP) also matches U+180E; llama.cpp and HF's regex
// engines use the Unicode White_Space property. Rewrite \s / \S to it
// (also inside character classes, where \p{...} is allowed).
std::string white_space_escapes(const std::string& p) {
  std::string r;
  r.reserve(p.size() + 32);
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == '\\' && i + 1 < p.size()) {
      const char c = p[++i];
      if (c == 's')
        r += "\\p{White_Space}";
      else if (c == 'S')
        r += "\\P{White_Space}";
      else
        r.append(1, '\\').append(1, c);
    } else {
      r += p[i];
    }
  }
  return r;
}

}  // namespace

RegexSplitter::RegexSplitter(const std::vector<std::string>& patterns) {
  for (const auto& original : patterns) {
    const std::string p = white_space_escapes(original);
    int err = 0;
    PCRE2_SIZE off = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(p.data()), p.size(), PCRE2_UTF | PCRE2_UCP, &err,
                                     &off, nullptr);
    if (!code) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof msg);
      for (void* c : codes_) pcre2_code_free(static_cast<pcre2_code*>(c));
      fail(BRISK_ERR_BAD_FORMAT, "tokenizer: pre-tokenizer regex does not compile at offset " +
                                     std::to_string(off) + ": " + reinterpret_cast<const char*>(msg) + ": " + p);
    }
    // Without JIT (unsupported platform) pcre2_match interprets: slower, same result.
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
    codes_.push_back(code);
  }
}

RegexSplitter::~RegexSplitter() {
  for (void* c : codes_) pcre2_code_free(static_cast<pcre2_code*>(c));
}

void RegexSplitter::split(std::string_view text, std::vector<Span>& words) const {
  words.clear();
  if (text.empty()) return;
  words.push_back({0, static_cast<uint32_t>(text.size()), false});
  if (codes_.empty()) return;
  MatchScratch& ms = scratch();
  std::vector<Span> next;
  for (void* cv : codes_) {
    const pcre2_code* code = static_cast<const pcre2_code*>(cv);
    next.clear();
    next.reserve(words.size() * 2);
    for (const Span& sp : words) {
      const PCRE2_SPTR subject = reinterpret_cast<PCRE2_SPTR>(text.data() + sp.begin);
      const PCRE2_SIZE len = sp.end - sp.begin;
      PCRE2_SIZE start = 0, pos = 0;
      while (pos < len) {
        int rc = pcre2_match(code, subject, len, pos, PCRE2_NO_UTF_CHECK, ms.md, ms.mc);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0 && rc != 0) {
          PCRE2_UCHAR msg[256];
          pcre2_get_error_message(rc, msg, sizeof msg);
          fail(BRISK_ERR_INTERNAL, std::string("tokenizer: regex match failed: ") + reinterpret_cast<const char*>(msg));
        }
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(ms.md);
        const PCRE2_SIZE mb = ov[0], me = ov[1];
        if (me <= mb) {
          // An empty match splits nothing: step over one character.
          pos = mb + utf8_len_lead(static_cast<uint8_t>(subject[mb]));
          continue;
        }
        if (mb > start)
          next.push_back({sp.begin + static_cast<uint32_t>(start), sp.begin + static_cast<uint32_t>(mb), false});
        next.push_back({sp.begin + static_cast<uint32_t>(mb), sp.begin + static_cast<uint32_t>(me), true});
        start = pos = me;
      }
      if (start < len) next.push_back({sp.begin + static_cast<uint32_t>(start), sp.end, false});
    }
    words.swap(next);
  }
}

// ---- the pre-tokenizers llama.cpp knows, by tokenizer.ggml.pre ----

const char* const kGpt2Regex = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

namespace {

// Llama 3's (?i:'s|...) is spelt out without (?i), as llama.cpp does: PCRE2
// would also fold U+017F to 's'. (llama.cpp runs this and GPT-2's regex
// through hand-written splitters; they agree with the regex, which the
// libllama parity test checks, unassigned code points included.)
const char* const kLlama3Regex =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kQwen2Regex =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// GPT-2's regex as llama.cpp lists it (no final \s+: the gap it leaves is
// kept as a word anyway, so the words are the same).
const char* const kGpt2RegexLlamaCpp = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
// DeepSeek LLM's letter class: the cased letters (Lu, Ll, Lt) as ranges,
// exactly as its tokenizer.json spells them (canonical singletons such as
// U+2126 OHM SIGN and U+212A KELVIN SIGN included).
const char* const kDeepseekLetters =
    R"(\s?[\x{41}-\x{5A}\x{61}-\x{7A}\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293})"
    R"(\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A}\x{38C})"
    R"(\x{38E}-\x{3A1}\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556}\x{10A0}-\x{10C5})"
    R"(\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF}\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77})"
    R"(\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57})"
    R"(\x{1F59}\x{1F5B}\x{1F5D}\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4})"
    R"(\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC})"
    R"(\x{2102}\x{2107}\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D})"
    R"(\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B})"
    R"(\x{2C7E}-\x{2CE4}\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F})"
    R"(\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A})"
    R"(\x{FF41}-\x{FF5A}\x{10400}-\x{1044F}\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2})"
    R"(\x{10CC0}-\x{10CF2}\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}]+)";
// CJK ideographs, U+0800..U+4E00 and Hangul, as DeepSeek writes them, less
// the whitespace in those ranges: llama.cpp matches regexes without \p{..}
// with std::wregex on text where non-ASCII whitespace is replaced by U+000B,
// so whitespace never matches an explicit range there.
const char* const kDeepseekCjk =
    R"([\x{4E00}-\x{9FA5}\x{0800}-\x{167F}\x{1681}-\x{1FFF}\x{200B}-\x{2027}\x{202A}-\x{202E}\x{2030}-\x{205E})"
    R"(\x{2060}-\x{2FFF}\x{3001}-\x{4E00}\x{AC00}-\x{D7FF}]+)";
// DeepSeek LLM's punctuation class (U+3000 left out for the same reason).
const char* const kDeepseekPunct =
    R"(\s?[\x{21}-\x{2F}\x{3A}-\x{7E}\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3001}-\x{3002}]+)";

struct Entry {
  std::vector<std::string_view> names;
  std::vector<std::string> regexes;
  bool ignore_merges = false;
  bool add_bos = false;
};

const std::vector<Entry>& table() {
  static const std::vector<Entry> t = {
      {{"default"},
       {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2RegexLlamaCpp, R"(\p{N}+)", "[0-9][0-9][0-9]"}},
      {{"gpt-2", "gpt2", "phi-2", "mpt", "olmo", "jina-es", "jina-de", "jina-v2-es", "jina-v2-de", "gigachat", "mellum"},
       {kGpt2RegexLlamaCpp}},
      {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2"},
       {kLlama3Regex},
       true,
       true},
      {{"dbrx", "smaug-bpe"}, {kLlama3Regex}},
      {{"qwen2", "deepseek-r1-qwen", "stablelm2"}, {kQwen2Regex}},
      {{"deepseek-llm"},
       {"[\\r\\n]", kDeepseekLetters, kDeepseekPunct, R"(\s+$)", kDeepseekCjk, R"(\p{N}+)"}},
      {{"deepseek-coder"}, {"[\\r\\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kDeepseekCjk, R"(\p{N})"}},
      {{"deepseek-v3"},
       {R"(\p{N}{1,3})", R"([\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)",
        R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}},
      {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva"},
       {R"(\p{N})", kGpt2RegexLlamaCpp}},
      {{"falcon"}, {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2RegexLlamaCpp, "[0-9][0-9][0-9]"}},
  };
  return t;
}

}  // namespace

std::optional<PreTokenizerSpec> pre_tokenizer_for(std::string_view name) {
  if (name.empty()) name = "default";  // llama.cpp: missing key -> "default" (with a warning)
  for (const Entry& e : table()) {
    for (std::string_view n : e.names) {
      if (n == name) return PreTokenizerSpec{e.regexes, e.ignore_merges, e.add_bos};
    }
  }
  return std::nullopt;
}

std::string known_pre_tokenizers() {
  std::string s;
  for (const Entry& e : table())
    for (std::string_view n : e.names) {
      if (!s.empty()) s += ", ";
      s += n;
    }
  return s;
}

}  // namespace brisk::tok
