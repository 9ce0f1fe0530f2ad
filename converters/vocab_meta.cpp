// SPDX-License-Identifier: MIT
#include "converters/vocab_meta.h"

#include "core/error.h"

namespace brisk::convert {

void add_vocab(gguf::Writer& w, const VocabData& v) {
  const size_t n = v.tokens.size();
  if ((!v.scores.empty() && v.scores.size() != n) || (!v.token_types.empty() && v.token_types.size() != n))
    fail(BRISK_ERR_INTERNAL, "vocabulary: scores or token types do not match the token count");
  w.add_string("tokenizer.ggml.model", v.model);
  if (!v.pre.empty()) w.add_string("tokenizer.ggml.pre", v.pre);
  w.add_strings("tokenizer.ggml.tokens", v.tokens);
  if (!v.scores.empty()) w.add_f32s("tokenizer.ggml.scores", v.scores);
  if (!v.token_types.empty()) w.add_i32s("tokenizer.ggml.token_type", v.token_types);
  if (!v.merges.empty()) w.add_strings("tokenizer.ggml.merges", v.merges);
  auto id = [&](const char* key, const std::optional<int32_t>& x) {
    if (!x) return;
    if (*x >= 0 && static_cast<size_t>(*x) >= n)
      fail(BRISK_ERR_BAD_FORMAT, std::string("vocabulary: ") + key + " " + std::to_string(*x) +
                                     " is outside the " + std::to_string(n) + " tokens");
    w.add_u32(key, *x < 0 ? 0xFFFFFFFFu : static_cast<uint32_t>(*x));
  };
  id("tokenizer.ggml.bos_token_id", v.bos_id);
  id("tokenizer.ggml.eos_token_id", v.eos_id);
  id("tokenizer.ggml.unknown_token_id", v.unk_id);
  // llama.cpp's key is spelled this way.
  id("tokenizer.ggml.seperator_token_id", v.sep_id);
  id("tokenizer.ggml.padding_token_id", v.pad_id);
  id("tokenizer.ggml.eot_token_id", v.eot_id);
  id("tokenizer.ggml.eom_token_id", v.eom_id);
  if (v.add_bos) w.add_bool("tokenizer.ggml.add_bos_token", *v.add_bos);
  if (v.add_eos) w.add_bool("tokenizer.ggml.add_eos_token", *v.add_eos);
  if (v.add_space_prefix) w.add_bool("tokenizer.ggml.add_space_prefix", *v.add_space_prefix);
  if (!v.chat_template.empty()) w.add_string("tokenizer.chat_template", v.chat_template);
}

}  // namespace brisk::convert
