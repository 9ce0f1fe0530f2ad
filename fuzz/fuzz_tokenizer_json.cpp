// SPDX-License-Identifier: MIT
// tokenizer.json as the HF converter reads it (lib/tokenizer's
// load_hf_vocab), then the tokenizer a converted model would load, used once.
#include "fuzz_util.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace brisk;
  // load_hf_vocab takes JSON text when it starts with '{' (else a path).
  // Built piecewise: GCC 12 warns falsely (-Wrestrict) on "{" + string&&.
  std::string text("{");
  text.append(reinterpret_cast<const char*>(data), size);
  fuzz::expect_clean([&] {
    VocabData v = load_hf_vocab(text);
    auto tok = Tokenizer::from_vocab(v);
    auto ids = tok->encode("Hello world, 123 <s>", true, true);
    (void)tok->decode(ids.data(), ids.size(), true);
  });
  return 0;
}
