// SPDX-License-Identifier: MIT
// What a long-running file operation (convert, verify, pack, unpack) is given
// by its caller: where to report progress, how to ask whether to stop, where
// to send warnings. All three are optional and are only ever called from the
// thread that started the operation, so callers need no locking.
#pragma once
#include <functional>
#include <string>

#include "core/error.h"

namespace brisk::bundle {

struct Job {
  std::function<void(double fraction, const std::string& what)> progress;
  std::function<bool()> cancelled;
  std::function<void(const std::string& message)> warn;
  int n_threads = 0;  // 0: all cores

  void report(double fraction, const std::string& what) const {
    if (progress) progress(fraction, what);
  }
  // Throws BRISK_ERR_CANCELLED when the caller asked to stop.
  void check_cancel() const {
    if (cancelled && cancelled()) fail(BRISK_ERR_CANCELLED, "cancelled by the caller");
  }
  void warning(const std::string& message) const {
    if (warn) warn(message);
  }
  // n_threads resolved against the machine (at least 1).
  int threads() const;
};

}  // namespace brisk::bundle
