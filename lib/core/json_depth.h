// SPDX-License-Identifier: MIT
// JSON read from files is checked for nesting depth before it is parsed:
// nlohmann::json copies, compares and dumps values recursively, so a document
// nested a few hundred thousand levels deep overflows the stack long after the
// parser accepted it. The scan is linear and allocates nothing.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

#include "core/error.h"

namespace brisk {

// Deeper than any configuration or tokenizer file in the wild, shallow enough
// for every recursive walk over the parsed value.
constexpr size_t kMaxJsonDepth = 512;

// The deepest nesting of arrays/objects in text (brackets inside strings do
// not count). Malformed text gives some depth; the parser rejects it later.
inline size_t json_nesting_depth(std::string_view text) {
  size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest) deepest = depth;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

// Throws BRISK_ERR_BAD_FORMAT naming `what` when text nests deeper than kMaxJsonDepth.
inline void check_json_depth(std::string_view text, const std::string& what) {
  const size_t d = json_nesting_depth(text);
  if (d > kMaxJsonDepth)
    fail(BRISK_ERR_BAD_FORMAT, what + ": JSON nested " + std::to_string(d) + " levels deep (at most " +
                                   std::to_string(kMaxJsonDepth) + " allowed)");
}

}  // namespace brisk
