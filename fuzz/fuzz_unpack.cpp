// SPDX-License-Identifier: MIT
// Bundle unpacking's write path: the bundle is streamed, decompressed and
// hashed into a GGUF in a scratch directory (what brisk_unpack does, with
// decompression capped at 16 MiB per input). A failure must leave no file
// at all (no partial output, no temporary); success exactly the output.
// Input as fuzz_bundle (bundle_input.h).
#include <cstring>
#include <filesystem>

#include "bundle/pack.h"
#include "bundle_input.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace brisk;
  std::string bytes;
  if (!bundle_input(data, size, &bytes)) return 0;
  const std::filesystem::path dir = fuzz::scratch_dir();
  const std::string out = (dir / "out.gguf").string();
  bool ok = false;
  fuzz::expect_clean([&] {
    bundle::MemorySource src(bytes.data(), bytes.size());
    bundle::ReadOptions o;
    o.out_path = out;
    o.max_output = 1 << 24;
    bundle::Job job;
    job.n_threads = 1;
    (void)bundle::read_bundle(src, o, job);
    ok = true;
  });
  const auto left = fuzz::dir_entries(dir);
  if (!ok && !left.empty()) fuzz::finding("a failed unpack left a file behind");
  if (ok && (left.size() != 1 || left[0] != "out.gguf")) fuzz::finding("an unpack left other files than its output");
  std::filesystem::remove(out);
  return 0;
}
