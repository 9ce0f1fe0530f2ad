// SPDX-License-Identifier: MIT
// config.json and the special-token files (tokenizer_config.json,
// generation_config.json) that the HF converter reads.
#include "converters/hf_config.h"
#include "converters/hf_files.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace brisk;
  const std::string text(reinterpret_cast<const char*>(data), size);
  fuzz::expect_clean([&] { (void)convert::parse_hf_config(text, "config.json"); });
  fuzz::expect_clean([&] {
    VocabData v;
    v.tokens = {"<unk>", "<s>", "</s>", "<|im_end|>"};
    convert::apply_hf_special_tokens(v, text, text, 1, 2);
  });
  return 0;
}
