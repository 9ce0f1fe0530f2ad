// SPDX-License-Identifier: MIT
// Type names for callers (brisk_type_name / brisk_type_from_name), and the
// compile-time ties between the engine's enums and the public ones: the C API
// converts between them with static_cast, which is only right while the
// values agree.
#include <string>

#include "core/tensor_type.h"
#include "engine/common.h"
#include "engine/engine.h"
#include "guard.h"

namespace {

using brisk::TensorType;

#define BRISK_SAME_TYPE(X) static_assert(BRISK_TYPE_##X == static_cast<int>(TensorType::X), "brisk_type " #X)
BRISK_SAME_TYPE(F32);
BRISK_SAME_TYPE(F16);
BRISK_SAME_TYPE(Q4_0);
BRISK_SAME_TYPE(Q4_1);
BRISK_SAME_TYPE(Q8_0);
BRISK_SAME_TYPE(Q4_K);
BRISK_SAME_TYPE(Q5_K);
BRISK_SAME_TYPE(Q6_K);
BRISK_SAME_TYPE(BF16);
#undef BRISK_SAME_TYPE

using brisk::StopReason;
static_assert(BRISK_STOP_MAX_TOKENS == static_cast<int>(StopReason::max_tokens));
static_assert(BRISK_STOP_EOS == static_cast<int>(StopReason::eos));
static_assert(BRISK_STOP_CALLBACK == static_cast<int>(StopReason::callback));
static_assert(BRISK_STOP_CONTEXT_FULL == static_cast<int>(StopReason::context_full));

using brisk::SeqState;
static_assert(BRISK_SEQ_IDLE == static_cast<int>(SeqState::idle));
static_assert(BRISK_SEQ_PREFILL == static_cast<int>(SeqState::prefill));
static_assert(BRISK_SEQ_GENERATING == static_cast<int>(SeqState::generating));
static_assert(BRISK_SEQ_FINISHED == static_cast<int>(SeqState::finished));

// The public types, by the engine's names (core/tensor_type.cpp), so that
// the CLI, the bindings and GGUF files spell them alike.
constexpr brisk_type kPublicTypes[] = {BRISK_TYPE_F32,  BRISK_TYPE_F16,  BRISK_TYPE_BF16,
                                       BRISK_TYPE_Q8_0, BRISK_TYPE_Q4_0, BRISK_TYPE_Q4_1,
                                       BRISK_TYPE_Q4_K, BRISK_TYPE_Q5_K, BRISK_TYPE_Q6_K};

}  // namespace

extern "C" {

const char* brisk_type_name(brisk_type type) {
  if (type == BRISK_TYPE_AUTO) return "auto";
  for (brisk_type t : kPublicTypes)
    if (t == type) return brisk::type_name(static_cast<TensorType>(t));
  return nullptr;
}

brisk_status brisk_type_from_name(const char* name, brisk_type* out_type) {
  return brisk::capi::guard([&] {
    brisk::capi::require(name, "name");
    brisk::capi::require(out_type, "out_type");
    std::string lower(name);
    for (char& c : lower)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (lower == "auto") {
      *out_type = BRISK_TYPE_AUTO;
      return;
    }
    std::string known = "auto";
    for (brisk_type t : kPublicTypes) {
      const char* n = brisk_type_name(t);
      if (lower == n) {
        *out_type = t;
        return;
      }
      known += std::string(", ") + n;
    }
    brisk::fail(BRISK_ERR_NOT_FOUND, "unknown type '" + std::string(name) + "' (known: " + known + ")");
  });
}

}  // extern "C"
