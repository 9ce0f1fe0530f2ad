// SPDX-License-Identifier: MIT
// Stop strings matched on the generated text as it streams: a stop string may
// span several tokens, so text that could be the start of one is held back
// until the next token shows whether it is.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace brisk::serve {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops = {}) : stops_(std::move(stops)) {}

  // Takes the next piece of text; appends to *emit what is certainly output.
  // Returns true once a stop string has appeared (it and what follows are
  // dropped; later calls emit nothing).
  bool push(std::string_view text, std::string* emit);
  // The text still held back (the generation ended without a stop string).
  std::string flush();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace brisk::serve
