// SPDX-License-Identifier: MIT
#include "tokenizer/utf8.h"

#include "tokenizer/tokenizer.h"

namespace brisk::tok {

int utf8_decode(const char* s, size_t n, uint32_t& cp) {
  if (n == 0) return 0;
  const uint8_t c0 = static_cast<uint8_t>(s[0]);
  if (c0 < 0x80) {
    cp = c0;
    return 1;
  }
  size_t len;
  uint32_t v;
  // The valid range of the second byte depends on the lead byte; checking it
  // exactly rejects overlongs, surrogates and > U+10FFFF at the earliest byte.
  uint8_t lo = 0x80, hi = 0xBF;
  if (c0 >= 0xC2 && c0 <= 0xDF) {
    len = 2;
    v = c0 & 0x1F;
  } else if (c0 >= 0xE0 && c0 <= 0xEF) {
    len = 3;
    v = c0 & 0x0F;
    if (c0 == 0xE0) lo = 0xA0;
    if (c0 == 0xED) hi = 0x9F;
  } else if (c0 >= 0xF0 && c0 <= 0xF4) {
    len = 4;
    v = c0 & 0x07;
    if (c0 == 0xF0) lo = 0x90;
    if (c0 == 0xF4) hi = 0x8F;
  } else {
    return -1;  // continuation byte, C0/C1 or F5..FF as a lead
  }
  for (size_t i = 1; i < len; ++i) {
    if (i >= n) return 0;  // valid so far, incomplete
    const uint8_t c = static_cast<uint8_t>(s[i]);
    const uint8_t l = i == 1 ? lo : 0x80;
    const uint8_t h = i == 1 ? hi : 0xBF;
    if (c < l || c > h) return -static_cast<int>(i);
    v = (v << 6) | (c & 0x3F);
  }
  cp = v;
  return static_cast<int>(len);
}

void utf8_append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

bool utf8_valid(std::string_view text) {
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    // ASCII runs dominate real text: skip them 8 bytes at a time.
    while (i + 8 <= n) {
      uint64_t w;
      __builtin_memcpy(&w, text.data() + i, 8);
      if (w & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= n) break;
    if (static_cast<uint8_t>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    uint32_t cp;
    int k = utf8_decode(text.data() + i, n - i, cp);
    if (k <= 0) return false;
    i += static_cast<size_t>(k);
  }
  return true;
}

std::string utf8_sanitize(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  size_t i = 0;
  while (i < text.size()) {
    uint32_t cp;
    int k = utf8_decode(text.data() + i, text.size() - i, cp);
    if (k > 0) {
      out.append(text.data() + i, static_cast<size_t>(k));
      i += static_cast<size_t>(k);
    } else {
      out += kReplacementChar;
      // An incomplete tail (k == 0) is one maximal subpart: the rest.
      i = k == 0 ? text.size() : i + static_cast<size_t>(-k);
    }
  }
  return out;
}

std::string utf8_sanitize_llama(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const uint8_t b = static_cast<uint8_t>(text[i]);
    if (b < 0x80) {
      out += static_cast<char>(b);
      ++i;
      continue;
    }
    const size_t len = b < 0xC0 ? 0 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : b < 0xF8 ? 4 : 0;
    bool ok = len != 0 && i + len <= n;
    uint32_t cp = len == 2 ? (b & 0x1F) : len == 3 ? (b & 0x0F) : (b & 0x07);
    for (size_t k = 1; ok && k < len; ++k) {
      const uint8_t c = static_cast<uint8_t>(text[i + k]);
      ok = (c & 0xC0) == 0x80;
      cp = (cp << 6) | (c & 0x3F);
    }
    if (!ok) {
      out += kReplacementChar;
      ++i;
      continue;
    }
    if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
      out += kReplacementChar;
    else
      utf8_append(out, cp);
    i += len;
  }
  return out;
}

}  // namespace brisk::tok

namespace brisk {

std::string Utf8Stream::push(std::string_view bytes) {
  pending_.append(bytes.data(), bytes.size());
  std::string out;
  size_t i = 0;
  const size_t n = pending_.size();
  while (i < n) {
    uint32_t cp;
    int k = tok::utf8_decode(pending_.data() + i, n - i, cp);
    if (k > 0) {
      out.append(pending_.data() + i, static_cast<size_t>(k));
      i += static_cast<size_t>(k);
    } else if (k == 0) {
      break;  // incomplete character: keep it for the next push
    } else {
      out += tok::kReplacementChar;
      i += static_cast<size_t>(-k);
    }
  }
  pending_.erase(0, i);
  return out;
}

std::string Utf8Stream::flush() {
  std::string out = pending_.empty() ? std::string() : std::string(tok::kReplacementChar);
  pending_.clear();
  return out;
}

}  // namespace brisk
