// SPDX-License-Identifier: MIT
#include "serve/stop_matcher.h"

#include <algorithm>

namespace brisk::serve {

bool StopMatcher::push(std::string_view text, std::string* emit) {
  if (stopped_) return true;
  held_.append(text);
  size_t first = std::string::npos;
  for (const std::string& s : stops_) first = std::min(first, held_.find(s));
  if (first != std::string::npos) {
    emit->append(held_, 0, first);
    held_.clear();
    stopped_ = true;
    return true;
  }
  // Hold back the longest tail that is the beginning of some stop string. A
  // stop string starts on a character boundary, so the cut is on one too.
  size_t keep = 0;
  for (const std::string& s : stops_) {
    for (size_t k = std::min(s.size() - 1, held_.size()); k > keep; --k) {
      if (std::string_view(held_).substr(held_.size() - k) == std::string_view(s).substr(0, k)) {
        keep = k;
        break;
      }
    }
  }
  emit->append(held_, 0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return false;
}

std::string StopMatcher::flush() {
  std::string rest;
  if (!stopped_) rest.swap(held_);
  return rest;
}

}  // namespace brisk::serve
