// SPDX-License-Identifier: MIT
// The .brisk bundle reader in checking mode, on the input layout of
// bundle_input.h.
#include <cstring>

#include "bundle/pack.h"
#include "bundle_input.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace brisk;
  std::string bytes;
  if (!bundle_input(data, size, &bytes)) return 0;
  fuzz::expect_clean([&] {
    bundle::MemorySource src(bytes.data(), bytes.size());
    bundle::ReadOptions o;
    o.max_output = 1 << 24;  // keep decompression bombs to 16 MiB per input
    (void)bundle::read_bundle(src, o, bundle::Job{});
  });
  return 0;
}
