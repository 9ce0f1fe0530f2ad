// SPDX-License-Identifier: MIT
// Versions, status names and the thread-local last error.
#include <string>

#include "guard.h"

// brisk.h's macros must say what CMakeLists.txt says (the one version source;
// capi/CMakeLists.txt passes these in).
static_assert(BRISK_VERSION_MAJOR == BRISK_CMAKE_VERSION_MAJOR && BRISK_VERSION_MINOR == BRISK_CMAKE_VERSION_MINOR &&
                  BRISK_VERSION_PATCH == BRISK_CMAKE_VERSION_PATCH,
              "brisk.h's BRISK_VERSION_* differ from project(VERSION) in CMakeLists.txt");
static_assert(BRISK_ABI_VERSION_MAJOR == BRISK_CMAKE_ABI_MAJOR && BRISK_ABI_VERSION_MINOR == BRISK_CMAKE_ABI_MINOR,
              "brisk.h's BRISK_ABI_VERSION_* differ from BRISK_ABI_MAJOR/MINOR in CMakeLists.txt");

namespace brisk::capi {
namespace {
thread_local std::string t_last_error;
}
const char* t_last_error_c_str() noexcept { return t_last_error.c_str(); }
void set_last_error(const std::string& msg) noexcept {
  try {
    t_last_error = msg;
  } catch (...) {
    t_last_error.clear();  // no memory for the message: an empty one rather than none
  }
}
void clear_last_error() noexcept { t_last_error.clear(); }

brisk_status current_exception_status() noexcept {
  try {
    throw;
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

void check_unknown_tail(const void* given, size_t given_size, size_t known_size) {
  const unsigned char* p = static_cast<const unsigned char*>(given);
  for (size_t i = known_size; i < given_size; ++i) {
    if (p[i] != 0)
      fail(BRISK_ERR_UNSUPPORTED,
           "options struct_size " + std::to_string(given_size) + " is larger than the " + std::to_string(known_size) +
               " bytes libbrisk " BRISK_VERSION_STRING " (ABI " + std::to_string(BRISK_ABI_VERSION_MAJOR) + "." +
               std::to_string(BRISK_ABI_VERSION_MINOR) + ") knows, and byte " + std::to_string(i) +
               " of the fields it does not know is set: the program needs a newer libbrisk");
  }
}
}  // namespace brisk::capi

extern "C" {

const char* brisk_version(void) { return BRISK_VERSION_STRING; }

uint32_t brisk_abi_version(void) {
  return (static_cast<uint32_t>(BRISK_ABI_VERSION_MAJOR) << 16) | BRISK_ABI_VERSION_MINOR;
}

const char* brisk_last_error(void) { return brisk::capi::t_last_error_c_str(); }

const char* brisk_status_name(brisk_status s) {
  switch (s) {
    case BRISK_OK: return "BRISK_OK";
    case BRISK_ERR_INVALID_ARGUMENT: return "BRISK_ERR_INVALID_ARGUMENT";
    case BRISK_ERR_NOT_FOUND: return "BRISK_ERR_NOT_FOUND";
    case BRISK_ERR_IO: return "BRISK_ERR_IO";
    case BRISK_ERR_BAD_FORMAT: return "BRISK_ERR_BAD_FORMAT";
    case BRISK_ERR_UNSUPPORTED: return "BRISK_ERR_UNSUPPORTED";
    case BRISK_ERR_OUT_OF_MEMORY: return "BRISK_ERR_OUT_OF_MEMORY";
    case BRISK_ERR_CONTEXT_FULL: return "BRISK_ERR_CONTEXT_FULL";
    case BRISK_ERR_BUFFER_TOO_SMALL: return "BRISK_ERR_BUFFER_TOO_SMALL";
    case BRISK_ERR_CANCELLED: return "BRISK_ERR_CANCELLED";
    case BRISK_ERR_CHECKSUM: return "BRISK_ERR_CHECKSUM";
    case BRISK_ERR_INTERNAL: return "BRISK_ERR_INTERNAL";
  }
  return "BRISK_ERR_UNKNOWN";
}

}  // extern "C"
