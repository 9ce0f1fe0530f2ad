// SPDX-License-Identifier: MIT
// The boundary between C++ and C: run a body, turn any exception into a
// brisk_status and remember the message for brisk_last_error().
#pragma once
#include <cstring>
#include <new>
#include <string>

#include "brisk/brisk.h"
#include "brisk/brisk_experimental.h"
#include "core/error.h"

namespace brisk::capi {

void set_last_error(const std::string& msg) noexcept;
void clear_last_error() noexcept;
const char* t_last_error_c_str() noexcept;

// The message and status of the exception being handled (call in a catch).
brisk_status current_exception_status() noexcept;

template <class F>
brisk_status guard(F&& body) noexcept {
  try {
    clear_last_error();
    body();
    return BRISK_OK;
  } catch (...) {
    return current_exception_status();
  }
}

// For calls that return no status (void, or a value with a neutral fallback
// such as 0): no exception crosses the boundary; a failure sets
// brisk_last_error() but a success leaves it as it was (these calls do not
// report failures through a status, so they do not clear an earlier one).
template <class F>
void guard_void(F&& body) noexcept {
  try {
    body();
  } catch (...) {
    current_exception_status();
  }
}
template <class R, class F>
R guard_value(R fallback, F&& body) noexcept {
  try {
    return body();
  } catch (...) {
    current_exception_status();
    return fallback;
  }
}

// The body of every brisk_*_options_init_sized: full defaults, of which the
// caller receives the first `size` bytes (its struct as its header knows it).
template <class T>
void init_sized(T* o, size_t size, void (*fill)(T*)) {
  if (!o || size < sizeof(uint32_t)) return;
  T full{};
  fill(&full);
  const size_t n = size < sizeof(T) ? size : sizeof(T);
  std::memcpy(static_cast<void*>(o), &full, n);
  o->struct_size = static_cast<uint32_t>(n);
}

// Checks a required pointer argument.
inline void require(const void* p, const char* what) {
  if (!p) fail(BRISK_ERR_INVALID_ARGUMENT, std::string(what) + " is NULL");
}

// Copies n items to a caller buffer with the (buf, cap, needed) convention.
template <class T>
void copy_out(const T* src, size_t n, T* buf, size_t cap, size_t* needed) {
  if (needed) *needed = n;
  if (n > cap || (n > 0 && !buf))
    fail(BRISK_ERR_BUFFER_TOO_SMALL,
         "buffer holds " + std::to_string(cap) + " items, " + std::to_string(n) + " needed");
  for (size_t i = 0; i < n; ++i) buf[i] = src[i];
}

// Text out: needed counts the terminating NUL, which is always written.
inline void copy_text_out(const std::string& s, char* buf, size_t cap, size_t* needed) {
  size_t n = s.size() + 1;
  if (needed) *needed = n;
  if (n > cap || !buf)
    fail(BRISK_ERR_BUFFER_TOO_SMALL,
         "buffer holds " + std::to_string(cap) + " bytes, " + std::to_string(n) + " needed");
  s.copy(buf, s.size());
  buf[s.size()] = '\0';
}

}  // namespace brisk::capi
