// SPDX-License-Identifier: MIT
#include "engine/common.h"

#include <algorithm>

#include "core/error.h"

namespace brisk {

TensorType default_cache_type(const Model& model) {
  const Weights& w = model.weights();
  bool all_f32 = w.token_embd.type == TensorType::F32 && w.output.type == TensorType::F32;
  for (const LayerWeights& L : w.layers)
    for (const Matrix* m : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down})
      all_f32 = all_f32 && m->type == TensorType::F32;
  return all_f32 ? TensorType::F32 : TensorType::F16;
}

int resolve_context(const Model& m, int n_ctx) {
  if (n_ctx < 0) fail(BRISK_ERR_INVALID_ARGUMENT, "context length must be positive");
  if (n_ctx == 0) n_ctx = std::min(m.config().n_ctx_train, 4096);
  return n_ctx;
}

std::string generated_piece(const Tokenizer& tok, int32_t prev, int32_t token) {
  std::string piece = tok.token_to_piece(token);
  if (prev == tok.bos() && tok.adds_space_prefix() && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
  return piece;
}

const Model& require_weights(const Model& m) {
  if (m.vocab_only()) fail(BRISK_ERR_INVALID_ARGUMENT, "the model was opened for tokenizing only");
  return m;
}

}  // namespace brisk
