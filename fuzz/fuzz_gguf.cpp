// SPDX-License-Identifier: MIT
// GGUF reader, then what brisk does with a parsed file's metadata: the
// checksum manifest (verify), the model configuration and the vocabulary.
#include "bundle/verify.h"
#include "fuzz_util.h"
#include "gguf/gguf.h"
#include "model/config.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace brisk;
  const std::string path = fuzz::as_file(data, size);
  fuzz::expect_clean([&] {
    gguf::File f(path);
    for (const auto& [key, value] : f.metadata()) (void)value.to_string();
    bundle::Job job;
    job.n_threads = 1;
    fuzz::expect_clean([&] { (void)bundle::verify_gguf(f, job); });
    fuzz::expect_clean([&] { (void)ModelConfig::from_gguf(f); });
    fuzz::expect_clean([&] { (void)read_gguf_vocab(f); });
  });
  return 0;
}
