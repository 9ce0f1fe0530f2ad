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

void set_last_error(const std::string& msg);
void clear_last_error();
const char* t_last_error_c_str();

template <class F>
brisk_status guard(F&& body) noexcept {
  try {
    clear_last_error();
    body();
    return BRISK_OK;
  } catch (const Error& e) {
    set_last_error(e.what());
    return e.code();
  } catch (const std::bad_alloc&) {
    set_last_error("out of memory");
    return BRISK_ERR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    set_last_error(std::string("internal error: ") + e.what());
    return BRISK_ERR_INTERNAL;
  } catch (...) {
    set_last_error("internal error: unknown exception");
    return BRISK_ERR_INTERNAL;
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
