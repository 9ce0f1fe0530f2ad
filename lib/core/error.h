// SPDX-License-Identifier: MIT
// Errors inside the engine are C++ exceptions carrying a brisk_status code and a
// one-line message. capi/ catches every exception at the boundary and turns it
// into a status plus brisk_last_error(); nothing else ever sees them.
#pragma once
#include <stdexcept>
#include <string>

#include "brisk/brisk.h"

namespace brisk {

class Error : public std::runtime_error {
 public:
  Error(brisk_status code, const std::string& msg) : std::runtime_error(msg), code_(code) {}
  brisk_status code() const { return code_; }

 private:
  brisk_status code_;
};

[[noreturn]] inline void fail(brisk_status code, const std::string& msg) { throw Error(code, msg); }

}  // namespace brisk
