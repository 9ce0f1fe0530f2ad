// SPDX-License-Identifier: MIT
// A Hugging Face tokenizer.json loaded as brisk's HF tokenizer (normalizers,
// pre-tokenizers with their PCRE2 regexes, BPE/byte-level models, added
// tokens), then used on text.
// Input: [flags byte] tokenizer.json '\0' text. Flags: bit 0 add_bos,
// bit 1 parse_special. The JSON always starts with '{' (else it is a path).
#include "fuzz_util.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace brisk;
  if (size < 1) return 0;
  const uint8_t flags = data[0];
  const auto parts = fuzz::split_input(data + 1, size - 1, 2);
  std::string json("{");  // piecewise: GCC 12 warns falsely (-Wrestrict) on "{" + string&&
  json += parts[0];
  const std::string_view text = parts.size() > 1 ? parts[1] : std::string_view("Hello world, 123 <s> \xC3\xA9t\xC3\xA9");
  fuzz::expect_clean([&] {
    auto tok = Tokenizer::from_hf_json(json);
    const int32_t n_vocab = tok->n_vocab();
    const auto ids = tok->encode(text, flags & 1, flags & 2);
    for (int32_t id : ids)
      if (id < 0 || id >= n_vocab) fuzz::finding("HF tokenizer gave an id out of range");
    (void)tok->decode(ids.data(), ids.size(), true);
    for (int32_t id : ids) (void)tok->token_to_piece(id, true);
  });
  return 0;
}
