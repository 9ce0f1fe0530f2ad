/* SPDX-License-Identifier: MIT */
/* parallel: one thread drives four sequences through an engine.
 *
 *   parallel MODEL.gguf [N_TOKENS]
 *
 * A shared prefix is evaluated once, in its own sequence, and forked four
 * times; each fork gets its own continuation and generates. Every
 * brisk_engine_step() is one forward pass over all of them, so each weight
 * is read once per step for the four. Plain C99 against brisk.h. */
#include <brisk/brisk.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_SEQ 4

#define CHECK(call)                                                                        \
  do {                                                                                     \
    brisk_status st_ = (call);                                                             \
    if (st_ != BRISK_OK) {                                                                 \
      fprintf(stderr, "%s failed: %s (%s)\n", #call, brisk_last_error(), brisk_status_name(st_)); \
      goto fail;                                                                           \
    }                                                                                      \
  } while (0)

/* A growing text buffer, one per sequence: the token callback appends. */
struct text {
  char *data;
  size_t len, cap;
};

static int append(void *user_data, int32_t token, const char *piece, size_t len) {
  struct text *t = user_data;
  (void)token;
  if (t->len + len + 1 > t->cap) {
    size_t cap = (t->len + len + 1) * 2;
    char *p = realloc(t->data, cap);
    if (!p) return 1; /* stop this sequence */
    t->data = p;
    t->cap = cap;
  }
  memcpy(t->data + t->len, piece, len);
  t->len += len;
  t->data[t->len] = '\0';
  return 0;
}

int main(int argc, char **argv) {
  static const char *prefix = "Once upon a time, there was a";
  static const char *suffixes[N_SEQ] = {" little girl", " big dog", " boy named", " tree"};
  brisk_model *model = NULL;
  brisk_engine *engine = NULL;
  brisk_sequence *root = NULL, *seq[N_SEQ] = {NULL};
  struct text out[N_SEQ];
  brisk_engine_options eo;
  brisk_sampler_options sp;
  brisk_generate_options go;
  uint32_t active = 0, steps = 0;
  char desc[512];
  int i, rc = 1;
  long n_predict;

  memset(out, 0, sizeof out);
  if (argc < 2) {
    fprintf(stderr, "usage: %s MODEL.gguf [N_TOKENS]\n", argv[0]);
    return 2;
  }
  n_predict = argc > 2 ? strtol(argv[2], NULL, 10) : 32;

  CHECK(brisk_model_open(argv[1], NULL, &model));
  brisk_engine_options_init(&eo);
  eo.n_ctx = 256;
  eo.n_seq_max = N_SEQ + 1; /* the four forks and the prefix they share */
  CHECK(brisk_engine_create(model, &eo, &engine));
  CHECK(brisk_engine_describe(engine, desc, sizeof desc, NULL));
  fprintf(stderr, "engine: %s\n", desc);

  /* The shared prefix, evaluated once. */
  CHECK(brisk_sequence_create(engine, &root));
  CHECK(brisk_sequence_add_text(root, prefix, strlen(prefix), BRISK_TOKENIZE_ADD_BOS));
  do {
    CHECK(brisk_engine_step(engine, &active));
  } while (active > 0);

  brisk_sampler_options_init(&sp);
  sp.temperature = 0; /* greedy: the same text on every run */
  brisk_generate_options_init(&go);
  go.max_tokens = (int32_t)n_predict;
  go.token_fn = append;
  for (i = 0; i < N_SEQ; ++i) {
    CHECK(brisk_sequence_fork(root, &seq[i]));
    CHECK(brisk_sequence_add_text(seq[i], suffixes[i], strlen(suffixes[i]), 0));
    go.token_user_data = &out[i]; /* per-sequence callback state */
    CHECK(brisk_sequence_generate(seq[i], &sp, &go));
  }
  brisk_sequence_free(root); /* the forks have their own copy of the prefix */
  root = NULL;

  /* One thread, one loop: every step advances every sequence. */
  do {
    CHECK(brisk_engine_step(engine, &active));
    ++steps;
  } while (active > 0);

  for (i = 0; i < N_SEQ; ++i) {
    size_t n = 0;
    brisk_sequence_generated(seq[i], NULL, 0, &n); /* size query */
    printf("[%d] %s%s%s\n", i, prefix, suffixes[i], out[i].data ? out[i].data : "");
    fprintf(stderr, "[%d] %zu tokens, stop reason %d\n", i, n, (int)brisk_sequence_stop_reason(seq[i]));
  }
  fprintf(stderr, "%u steps for %d sequences\n", (unsigned)steps, N_SEQ);
  rc = 0;

fail:
  for (i = 0; i < N_SEQ; ++i) free(out[i].data);
  brisk_engine_free(engine); /* frees the sequences still attached */
  brisk_model_close(model);
  return rc;
}
