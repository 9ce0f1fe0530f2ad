// SPDX-License-Identifier: MIT
// Pieces shared by Session (one sequence) and Engine (many).
#pragma once
#include <string>

#include "core/tensor_type.h"
#include "model/model.h"

namespace brisk {

enum class StopReason { max_tokens, eos, callback, context_full };

// The cache type used when none is asked for: F32 for a model whose matrices
// are all F32 (so it computes exactly what the float reference does), F16
// otherwise.
TensorType default_cache_type(const Model& model);

// n_ctx 0 means the model's training context, at most 4096.
int resolve_context(const Model& model, int n_ctx);

// The text a generated token adds after `prev`: right after BOS, the space
// SentencePiece put before the first word is not part of the text (as run.c
// and llama.cpp print it).
std::string generated_piece(const Tokenizer& tok, int32_t prev, int32_t token);

// The model, checked to have weights (not opened for tokenizing only).
const Model& require_weights(const Model& model);

}  // namespace brisk
