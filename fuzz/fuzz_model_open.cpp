// SPDX-License-Identifier: MIT
// brisk_model_open end to end through the C API: the input is a model file
// (GGUF -> config -> weights -> tokenizer), opened three ways (full, vocab
// only, with checksum verification). Whatever opens is then used as a
// program would: metadata, tokenize and detokenize, every token's piece,
// chat rendering, and a short session (evaluate, logits, sample).
// Every call must return a status; a crash or sanitizer report is a finding.
#include <cstring>
#include <string>
#include <vector>

#include "brisk/brisk.h"
#include "fuzz_util.h"

namespace {

void use_vocab(brisk_model* m) {
  char buf[256];
  size_t needed = 0;
  const int32_t n_vocab = brisk_model_n_vocab(m);
  (void)brisk_model_n_ctx_train(m);
  (void)brisk_model_token_bos(m);
  (void)brisk_model_token_eos(m);
  (void)brisk_model_file_size(m);
  (void)brisk_model_describe(m, buf, sizeof buf, &needed);
  (void)brisk_model_weight_type(m, buf, sizeof buf, &needed);
  for (const char* key : {"general.architecture", "tokenizer.ggml.model", "tokenizer.ggml.tokens", "general.name"})
    (void)brisk_model_meta(m, key, buf, sizeof buf, &needed);

  static const char text[] = "Hello world <s> </s><|im_start|>user\n \xE2\x96\x81 12 \xF0\x9F\x98\x80 \xFF";
  int32_t toks[128];
  size_t n = 0;
  if (brisk_tokenize(m, text, sizeof text - 1, BRISK_TOKENIZE_ADD_BOS | BRISK_TOKENIZE_PARSE_SPECIAL, toks, 128, &n) ==
      BRISK_OK) {
    if (n > 128) brisk::fuzz::finding("tokenize reported success with more tokens than fit");
    for (size_t i = 0; i < n; ++i)
      if (toks[i] < 0 || toks[i] >= n_vocab) brisk::fuzz::finding("tokenize gave an id out of range");
    (void)brisk_detokenize(m, toks, n, BRISK_TOKENIZE_ADD_BOS, buf, sizeof buf, &needed);
  }
  const int32_t bad[] = {-1, n_vocab, INT32_MAX};
  (void)brisk_detokenize(m, bad, 3, 0, buf, sizeof buf, &needed);
  for (int32_t t = 0; t < n_vocab && t < 4096; ++t) {
    (void)brisk_token_to_piece(m, t, 0, buf, sizeof buf, &needed);
    (void)brisk_token_to_piece(m, t, BRISK_PIECE_SPECIAL, buf, 1, &needed);
  }
  const char* roles[] = {"system", "user"};
  const char* contents[] = {"Be brief.", "Hi <|im_end|>"};
  (void)brisk_chat_render(m, nullptr, roles, contents, 2, 1, buf, sizeof buf, &needed);
}

void use_session(brisk_model* m) {
  brisk_session_options so;
  brisk_session_options_init(&so);
  so.n_ctx = 8;
  so.n_threads = 1;
  so.n_batch = 4;
  so.no_pin = 1;
  brisk_session* s = nullptr;
  if (brisk_session_create(m, &so, &s) != BRISK_OK) return;
  const int32_t n_vocab = brisk_model_n_vocab(m);
  const int32_t bos = brisk_model_token_bos(m);
  const int32_t prompt[] = {bos >= 0 ? bos : 0, n_vocab > 1 ? n_vocab - 1 : 0, 0};
  if (brisk_session_eval(s, prompt, 3) == BRISK_OK) {
    std::vector<float> logits(static_cast<size_t>(n_vocab > 0 ? n_vocab : 1));
    size_t needed = 0;
    (void)brisk_session_logits(s, logits.data(), logits.size(), &needed);
    brisk_sampler_options po;
    brisk_sampler_options_init(&po);
    for (float temp : {0.0f, 0.8f}) {
      po.temperature = temp;
      brisk_sampler* smp = nullptr;
      if (brisk_sampler_create(&po, &smp) != BRISK_OK) continue;
      int32_t tok = -1;
      if (brisk_sampler_sample(smp, s, &tok) == BRISK_OK && (tok < 0 || tok >= n_vocab))
        brisk::fuzz::finding("sampler gave an id out of range");
      brisk_sampler_free(smp);
    }
  }
  const int32_t bad[] = {-1, n_vocab};
  (void)brisk_session_eval(s, bad, 2);
  brisk_session_free(s);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = brisk::fuzz::as_file(data, size);
  for (int mode = 0; mode < 3; ++mode) {
    brisk_model_options mo;
    brisk_model_options_init(&mo);
    mo.vocab_only = mode == 1;
    mo.verify = mode == 2;
    brisk_model* m = nullptr;
    const brisk_status st = brisk_model_open(path.c_str(), &mo, &m);
    if (st != BRISK_OK) {
      if (std::getenv("BRISK_FUZZ_VERBOSE")) std::fprintf(stderr, "open (mode %d): %s\n", mode, brisk_last_error());
      if (m) brisk::fuzz::finding("failed open returned a model");
      if (!brisk_last_error() || !*brisk_last_error()) brisk::fuzz::finding("failed open without a message");
      continue;
    }
    use_vocab(m);
    if (mode == 0) use_session(m);
    brisk_model_close(m);
  }
  return 0;
}
