// SPDX-License-Identifier: MIT
// UTF-8 helpers shared by the tokenizers, the HF loader and Utf8Stream.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace brisk::tok {

// Length of a UTF-8 sequence judged from its first byte alone, the way
// llama.cpp splits text into symbols (a stray continuation byte counts as 1).
// Used where parity with llama.cpp matters more than validation (SPM).
inline size_t utf8_len_lead(uint8_t c) {
  static constexpr uint8_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLen[c >> 4];
}

// Strict decoding of one character at s[0..n). Returns:
//   > 0  length of a valid, complete character (cp is set);
//     0  s is a valid but incomplete prefix of a character (needs more bytes);
//   < 0  -k: the first k bytes are ill-formed (the "maximal subpart" of
//        Unicode §3.9, so that each ill-formed subpart becomes one U+FFFD).
// Overlong forms, surrogates and values above U+10FFFF are ill-formed.
int utf8_decode(const char* s, size_t n, uint32_t& cp);

void utf8_append(std::string& out, uint32_t cp);

// Copy of `text` in which every ill-formed byte sequence is replaced by
// U+FFFD (one per maximal subpart, including an incomplete tail). PCRE2 in
// UTF mode needs valid input; llama.cpp also maps invalid bytes to U+FFFD
// before byte-level BPE.
std::string utf8_sanitize(std::string_view text);

// Copy of `text` decoded the way llama.cpp's unicode_cpts_from_utf8 does and
// re-encoded: a lead byte whose continuation bytes are missing or wrong is
// one U+FFFD (the next byte is then looked at afresh), overlong forms are
// accepted and re-encoded canonically (C0 AF -> '/'). Surrogates and values
// above U+10FFFF, which llama.cpp passes on as invalid UTF-8 or rejects,
// become U+FFFD. Byte-level BPE uses this for llama.cpp parity.
std::string utf8_sanitize_llama(std::string_view text);

// True if `text` is entirely valid UTF-8 (fast path for utf8_sanitize).
bool utf8_valid(std::string_view text);

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";

}  // namespace brisk::tok
