// SPDX-License-Identifier: MIT
// Writing a vocabulary (brisk::VocabData, what lib/tokenizer reads and
// produces) as GGUF tokenizer.ggml.* metadata, the inverse of read_gguf_vocab.
#pragma once
#include "gguf/writer.h"
#include "tokenizer/tokenizer.h"

namespace brisk::convert {

// Keys written: tokenizer.ggml.model, .pre (if set), .tokens, .scores and
// .token_type (if non-empty), .merges (if non-empty), the *_token_id keys
// that are set (a negative id is written as 0xFFFFFFFF = none, as llama.cpp
// does), add_bos_token / add_eos_token / add_space_prefix when set, and
// tokenizer.chat_template when non-empty.
void add_vocab(gguf::Writer& w, const VocabData& v);

}  // namespace brisk::convert
