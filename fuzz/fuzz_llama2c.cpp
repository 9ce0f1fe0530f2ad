// SPDX-License-Identifier: MIT
// llama2.c checkpoint + tokenizer.bin conversion through the C API
// (brisk_convert_llama2c) into a scratch directory, then the converted model
// opened. Input: [type byte][u32 checkpoint length][checkpoint][tokenizer].
// A failed conversion must leave no file behind (not even a temporary one);
// a successful one exactly the output.
#include <cstring>
#include <filesystem>
#include <string>

#include "brisk/brisk.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace brisk;
  if (size < 5) return 0;
  static const int32_t kTypes[] = {BRISK_TYPE_AUTO, BRISK_TYPE_F16, BRISK_TYPE_Q8_0, BRISK_TYPE_Q4_0, BRISK_TYPE_Q4_K};
  const int32_t type = kTypes[data[0] % 5];
  uint32_t ck_len;
  std::memcpy(&ck_len, data + 1, 4);
  data += 5;
  size -= 5;
  const size_t n = std::min<size_t>(ck_len, size);
  const std::string ck = fuzz::as_file(data, n, 0);
  const std::string tk = fuzz::as_file(data + n, size - n, 1);
  const std::filesystem::path dir = fuzz::scratch_dir();
  const std::string out = (dir / "out.gguf").string();

  brisk_convert_options o;
  brisk_convert_options_init(&o);
  o.type = type;
  o.n_threads = 1;
  const brisk_status st = brisk_convert_llama2c(ck.c_str(), tk.c_str(), out.c_str(), &o);
  const auto left = fuzz::dir_entries(dir);
  if (st != BRISK_OK) {
    if (!left.empty()) fuzz::finding("a failed conversion left a file behind");
    return 0;
  }
  if (left.size() != 1 || left[0] != "out.gguf") fuzz::finding("a conversion left other files than its output");
  brisk_model* m = nullptr;
  if (brisk_model_open(out.c_str(), nullptr, &m) != BRISK_OK) fuzz::finding("a converted model does not open");
  brisk_model_close(m);
  std::filesystem::remove(out);
  return 0;
}
