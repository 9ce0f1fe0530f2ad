// SPDX-License-Identifier: MIT
// The safetensors header parser on arbitrary bytes; every tensor it accepts
// must lie inside the input (touching each byte lets ASan check that).
#include "converters/safetensors.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace brisk;
  fuzz::expect_clean([&] {
    convert::StHeader h = convert::parse_safetensors(data, size, "fuzz");
    volatile uint8_t sink = 0;
    for (const convert::StTensor& t : h.tensors)
      if (t.end > t.begin) sink = sink ^ t.data[0] ^ t.data[t.end - t.begin - 1];
  });
  return 0;
}
