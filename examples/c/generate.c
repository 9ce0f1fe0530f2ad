/* SPDX-License-Identifier: MIT */
/* generate: open a model, tokenize a prompt, stream a continuation.
 *
 *   generate MODEL.gguf [PROMPT] [N_TOKENS]
 *
 * Plain C99 against brisk.h. Sampling is greedy, so the text is the same on
 * every run; set temperature in brisk_sampler_options for variety. */
#include <brisk/brisk.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Prints the failed call and brisk_last_error() (read right away: it is
 * thread-local and valid until the next brisk call). */
#define CHECK(call)                                                                        \
  do {                                                                                     \
    brisk_status st_ = (call);                                                             \
    if (st_ != BRISK_OK) {                                                                 \
      fprintf(stderr, "%s failed: %s (%s)\n", #call, brisk_last_error(), brisk_status_name(st_)); \
      goto fail;                                                                           \
    }                                                                                      \
  } while (0)

/* The token callback: brisk passes complete UTF-8 text (empty while a
 * character is still being assembled). Return non-zero to stop. */
static int on_token(void *user_data, int32_t token, const char *text, size_t len) {
  size_t *n_tokens = user_data;
  if (token >= 0) ++*n_tokens;
  fwrite(text, 1, len, stdout);
  fflush(stdout);
  return 0;
}

int main(int argc, char **argv) {
  const char *path, *prompt;
  long n_predict;
  brisk_model *model = NULL;
  brisk_session *session = NULL;
  brisk_sampler *sampler = NULL;
  brisk_session_options so;
  brisk_sampler_options sp;
  brisk_generate_options go;
  brisk_stop_reason reason;
  brisk_status st;
  int32_t *tokens = NULL;
  size_t n_tokens = 0, streamed = 0, generated = 0;
  int rc = 1;

  if (argc < 2) {
    fprintf(stderr, "usage: %s MODEL.gguf [PROMPT] [N_TOKENS]\n", argv[0]);
    return 2;
  }
  path = argv[1];
  prompt = argc > 2 ? argv[2] : "";
  n_predict = argc > 3 ? strtol(argv[3], NULL, 10) : 64;

  CHECK(brisk_model_open(path, NULL, &model));

  /* Tokenize: ask for the size first, then fill (the (buf, cap, needed) rule). */
  st = brisk_tokenize(model, prompt, strlen(prompt), BRISK_TOKENIZE_ADD_BOS, NULL, 0, &n_tokens);
  if (st != BRISK_OK && st != BRISK_ERR_BUFFER_TOO_SMALL) {
    fprintf(stderr, "tokenize: %s (%s)\n", brisk_last_error(), brisk_status_name(st));
    goto fail;
  }
  tokens = malloc((n_tokens ? n_tokens : 1) * sizeof *tokens);
  if (!tokens) goto fail;
  CHECK(brisk_tokenize(model, prompt, strlen(prompt), BRISK_TOKENIZE_ADD_BOS, tokens, n_tokens, &n_tokens));

  brisk_session_options_init(&so);
  so.n_ctx = 512;
  CHECK(brisk_session_create(model, &so, &session));
  CHECK(brisk_session_eval(session, tokens, n_tokens));

  brisk_sampler_options_init(&sp);
  sp.temperature = 0; /* greedy */
  CHECK(brisk_sampler_create(&sp, &sampler));

  brisk_generate_options_init(&go);
  go.max_tokens = (int32_t)n_predict;
  go.token_fn = on_token;
  go.token_user_data = &streamed;
  fputs(prompt, stdout);
  CHECK(brisk_generate(session, sampler, &go, &generated, &reason));
  printf("\n");
  fprintf(stderr, "[%zu prompt tokens, %zu generated, stop reason %d]\n", n_tokens, generated, (int)reason);
  rc = generated == streamed ? 0 : 1;

fail:
  brisk_sampler_free(sampler);
  brisk_session_free(session);
  brisk_model_close(model);
  free(tokens);
  return rc;
}
