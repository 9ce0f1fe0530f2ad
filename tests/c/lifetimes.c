/* SPDX-License-Identifier: MIT */
/* Frees sessions, engines, sequences, samplers, results and models in the
 * wrong order and inside callbacks: every misuse must give an error (or be
 * deferred as brisk.h documents), never a crash or a use of freed memory.
 * Plain C, run by ctest in every build; with -DBRISK_SANITIZE=ON the whole
 * tree, this program included, is built with AddressSanitizer, which then
 * also checks that nothing freed is touched and nothing leaks.
 * Uses a synthetic model, so it needs no test data. */
#include <brisk/brisk.h>
#include <brisk/brisk_experimental.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define EXPECT(cond)                                                                   \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      fprintf(stderr, "%s:%d: FAILED: %s (last error: %s)\n", __FILE__, __LINE__, #cond, \
              brisk_last_error());                                                     \
      ++failures;                                                                      \
    }                                                                                  \
  } while (0)

#define EXPECT_ERROR(call, code, words)                        \
  do {                                                         \
    brisk_status st_ = (call);                                 \
    EXPECT(st_ == (code));                                     \
    EXPECT(strstr(brisk_last_error(), (words)) != NULL);       \
  } while (0)

static brisk_model *open_model(void) {
  brisk_synthesize_options so;
  brisk_model *m = NULL;
  brisk_synthesize_options_init(&so);
  so.shape = "tiny";
  so.weight_type = "q8_0";
  so.n_threads = 1;
  if (brisk_model_open_synthetic(&so, NULL, &m) != BRISK_OK) {
    fprintf(stderr, "cannot make a synthetic model: %s\n", brisk_last_error());
    exit(2);
  }
  return m;
}

static brisk_session *new_session(brisk_model *m) {
  brisk_session_options so;
  brisk_session *s = NULL;
  int32_t prompt[3];
  brisk_session_options_init(&so);
  so.n_ctx = 64;
  so.n_threads = 1;
  so.no_pin = 1;
  EXPECT(brisk_session_create(m, &so, &s) == BRISK_OK);
  prompt[0] = brisk_model_token_bos(m) >= 0 ? brisk_model_token_bos(m) : 1;
  prompt[1] = 100;
  prompt[2] = 200;
  EXPECT(brisk_session_eval(s, prompt, 3) == BRISK_OK);
  return s;
}

static brisk_engine *new_engine(brisk_model *m, uint32_t n_seq) {
  brisk_engine_options eo;
  brisk_engine *e = NULL;
  brisk_engine_options_init(&eo);
  eo.n_ctx = 64;
  eo.n_seq_max = n_seq;
  eo.n_threads = 1;
  eo.no_pin = 1;
  EXPECT(brisk_engine_create(m, &eo, &e) == BRISK_OK);
  return e;
}

static brisk_sequence *new_generating(brisk_engine *e, brisk_token_fn fn, void *ud) {
  brisk_sequence *q = NULL;
  brisk_generate_options go;
  int32_t prompt[3] = {1, 100, 200};
  EXPECT(brisk_sequence_create(e, &q) == BRISK_OK);
  EXPECT(brisk_sequence_add_tokens(q, prompt, 3) == BRISK_OK);
  brisk_generate_options_init(&go);
  go.max_tokens = 16;
  go.token_fn = fn;
  go.token_user_data = ud;
  EXPECT(brisk_sequence_generate(q, NULL, &go) == BRISK_OK);
  return q;
}

static void run_engine(brisk_engine *e) {
  uint32_t active = 1;
  int steps = 0;
  while (active > 0 && steps++ < 100)
    if (brisk_engine_step(e, &active) != BRISK_OK) break;
}

/* ---- callbacks ---------------------------------------------------------- */

struct ctx {
  brisk_session *session;
  brisk_engine *engine;
  brisk_sequence *sequence;
  brisk_model *model;
  int calls;
  int after_free_calls;
  int freed;
  brisk_status inner;
};

static int free_session_in_token(void *ud, int32_t token, const char *text, size_t len) {
  struct ctx *c = (struct ctx *)ud;
  (void)text;
  (void)len;
  if (c->freed) ++c->after_free_calls;
  if (token >= 0 && ++c->calls == 2) {
    brisk_session_free(c->session);
    c->freed = 1;
    /* Freed: further calls on it are errors, not uses of freed memory. */
    c->inner = brisk_session_eval(c->session, &token, 1);
  }
  return 0;
}

static int free_session_in_abort(void *ud) {
  struct ctx *c = (struct ctx *)ud;
  if (c->freed) ++c->after_free_calls;
  if (!c->freed && ++c->calls == 1) {
    brisk_session_free(c->session);
    c->freed = 1;
  }
  return 0;
}

static int free_engine_in_token(void *ud, int32_t token, const char *text, size_t len) {
  struct ctx *c = (struct ctx *)ud;
  (void)text;
  (void)len;
  if (c->freed) ++c->after_free_calls;
  if (token >= 0 && ++c->calls == 2) {
    brisk_engine_free(c->engine);
    c->freed = 1;
    c->inner = brisk_sequence_add_tokens(c->sequence, &token, 1);
  }
  return 0;
}

static int free_engine_in_abort(void *ud) {
  struct ctx *c = (struct ctx *)ud;
  if (c->freed) ++c->after_free_calls;
  if (!c->freed && ++c->calls == 3) {
    brisk_engine_free(c->engine);
    c->freed = 1;
  }
  return 0;
}

static int free_own_sequence_in_token(void *ud, int32_t token, const char *text, size_t len) {
  struct ctx *c = (struct ctx *)ud;
  (void)text;
  (void)len;
  if (c->freed) ++c->after_free_calls;
  if (token >= 0 && ++c->calls == 2) {
    brisk_sequence_free(c->sequence);
    c->freed = 1;
    c->inner = brisk_sequence_add_tokens(c->sequence, &token, 1);
  }
  return 0;
}

static int close_model_in_token(void *ud, int32_t token, const char *text, size_t len) {
  struct ctx *c = (struct ctx *)ud;
  (void)text;
  (void)len;
  if (token >= 0 && ++c->calls == 1) {
    brisk_model_close(c->model);
    c->freed = 1;
  }
  return 0;
}

static int count_tokens(void *ud, int32_t token, const char *text, size_t len) {
  (void)text;
  (void)len;
  if (token >= 0) ++*(int *)ud;
  return 0;
}

/* ---- the cases ---------------------------------------------------------- */

static void session_freed_inside_its_token_callback(brisk_model *m) {
  struct ctx c = {0};
  brisk_sampler *smp = NULL;
  brisk_generate_options go;
  size_t n = 99;
  c.session = new_session(m);
  EXPECT(brisk_sampler_create(NULL, &smp) == BRISK_OK);
  brisk_generate_options_init(&go);
  go.max_tokens = 8;
  go.token_fn = free_session_in_token;
  go.token_user_data = &c;
  /* Freed inside: the generation stops (no more callbacks), the session goes
   * when brisk_generate returns. */
  (void)brisk_generate(c.session, smp, &go, &n, NULL);
  EXPECT(c.freed);
  EXPECT(c.after_free_calls == 0);
  EXPECT(c.inner == BRISK_ERR_INVALID_ARGUMENT);
  /* Using or freeing it again: an error naming the problem. */
  brisk_session_free(c.session);
  EXPECT(strstr(brisk_last_error(), "already freed") != NULL);
  EXPECT_ERROR(brisk_session_reset(c.session), BRISK_ERR_INVALID_ARGUMENT, "already freed");
  EXPECT(brisk_session_position(c.session) == 0);
  brisk_sampler_free(smp);
  brisk_sampler_free(smp);
  EXPECT(strstr(brisk_last_error(), "already freed") != NULL);
}

static void session_freed_inside_its_abort_callback(brisk_model *m) {
  struct ctx c = {0};
  brisk_session_options so;
  int32_t prompt[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  brisk_session_options_init(&so);
  so.n_ctx = 64;
  so.n_threads = 1;
  so.no_pin = 1;
  so.abort_fn = free_session_in_abort;
  so.abort_user_data = &c;
  EXPECT(brisk_session_create(m, &so, &c.session) == BRISK_OK);
  EXPECT(brisk_session_eval(c.session, prompt, 8) == BRISK_ERR_CANCELLED);
  EXPECT(c.freed);
  EXPECT(c.after_free_calls == 0);
  EXPECT_ERROR(brisk_session_eval(c.session, prompt, 1), BRISK_ERR_INVALID_ARGUMENT, "already freed");
}

static void engine_freed_inside_a_token_callback(brisk_model *m) {
  struct ctx c = {0};
  brisk_sequence *other;
  c.engine = new_engine(m, 2);
  c.sequence = new_generating(c.engine, free_engine_in_token, &c);
  other = new_generating(c.engine, free_engine_in_token, &c);
  EXPECT(brisk_engine_step(c.engine, NULL) == BRISK_OK); /* prompts */
  run_engine(c.engine);
  EXPECT(c.freed);
  EXPECT(c.after_free_calls == 0);
  EXPECT(c.inner == BRISK_ERR_INVALID_ARGUMENT);
  /* The engine and its sequences are gone: errors, not crashes. */
  EXPECT_ERROR(brisk_engine_step(c.engine, NULL), BRISK_ERR_INVALID_ARGUMENT, "already freed");
  brisk_sequence_free(other);
  EXPECT(strstr(brisk_last_error(), "freed") != NULL);
  EXPECT(brisk_sequence_get_state(c.sequence) == BRISK_SEQ_FINISHED);
  brisk_engine_free(c.engine);
  EXPECT(strstr(brisk_last_error(), "already freed") != NULL);
}

static void engine_freed_inside_its_abort_callback(brisk_model *m) {
  struct ctx c = {0};
  brisk_engine_options eo;
  brisk_engine_options_init(&eo);
  eo.n_ctx = 64;
  eo.n_seq_max = 1;
  eo.n_threads = 1;
  eo.no_pin = 1;
  eo.abort_fn = free_engine_in_abort;
  eo.abort_user_data = &c;
  EXPECT(brisk_engine_create(m, &eo, &c.engine) == BRISK_OK);
  c.sequence = new_generating(c.engine, count_tokens, &c.calls);
  EXPECT(brisk_engine_step(c.engine, NULL) == BRISK_ERR_CANCELLED);
  EXPECT(c.freed);
  EXPECT(c.after_free_calls == 0);
  EXPECT_ERROR(brisk_sequence_generated(c.sequence, NULL, 0, NULL), BRISK_ERR_INVALID_ARGUMENT, "freed");
}

static void sequence_freed_after_its_engine(brisk_model *m) {
  brisk_engine *e = new_engine(m, 2);
  int n = 0;
  brisk_sequence *a = new_generating(e, count_tokens, &n);
  brisk_sequence *b = NULL;
  EXPECT(brisk_sequence_create(e, &b) == BRISK_OK);
  run_engine(e);
  EXPECT(n == 16);
  brisk_engine_free(e);
  brisk_sequence_free(a);
  EXPECT(strstr(brisk_last_error(), "freed") != NULL);
  EXPECT_ERROR(brisk_sequence_add_tokens(b, NULL, 0), BRISK_ERR_INVALID_ARGUMENT, "freed");
  EXPECT(brisk_sequence_position(b) == 0);
  brisk_sequence_free(b);
  brisk_engine_free(e);
}

static void sequence_freed_inside_its_own_callback(brisk_model *m) {
  struct ctx c = {0};
  brisk_engine *e = new_engine(m, 2);
  int n_other = 0;
  c.sequence = new_generating(e, free_own_sequence_in_token, &c);
  (void)new_generating(e, count_tokens, &n_other);
  run_engine(e);
  EXPECT(c.freed);
  EXPECT(c.after_free_calls == 0);
  EXPECT(c.inner == BRISK_ERR_INVALID_ARGUMENT);
  EXPECT(n_other == 16); /* the other sequence is not disturbed */
  brisk_sequence_free(c.sequence);
  EXPECT(strstr(brisk_last_error(), "already freed") != NULL);
  brisk_engine_free(e); /* frees the other sequence too */
}

static void model_closed_with_live_session_and_engine(void) {
  brisk_model *m = open_model();
  brisk_session *s = new_session(m);
  brisk_engine *e = new_engine(m, 1);
  brisk_session *s2 = NULL;
  brisk_sampler *smp = NULL;
  brisk_generate_options go;
  size_t n = 0;
  int n_eng = 0;
  brisk_model_close(m); /* deferred: both still work */
  EXPECT(brisk_model_n_vocab(m) == 0);
  EXPECT(strstr(brisk_last_error(), "closed") != NULL);
  EXPECT_ERROR(brisk_session_create(m, NULL, &s2), BRISK_ERR_INVALID_ARGUMENT, "closed");
  EXPECT(s2 == NULL);
  EXPECT(brisk_sampler_create(NULL, &smp) == BRISK_OK);
  brisk_generate_options_init(&go);
  go.max_tokens = 4;
  EXPECT(brisk_generate(s, smp, &go, &n, NULL) == BRISK_OK);
  EXPECT(n == 4);
  (void)new_generating(e, count_tokens, &n_eng);
  run_engine(e);
  EXPECT(n_eng == 16);
  brisk_session_free(s);
  brisk_engine_free(e); /* the last holder: the model goes now */
  brisk_model_close(m);
  EXPECT(strstr(brisk_last_error(), "freed") != NULL);
  brisk_sampler_free(smp);
}

static void model_closed_inside_a_token_callback(void) {
  struct ctx c = {0};
  brisk_engine *e;
  c.model = open_model();
  e = new_engine(c.model, 1);
  (void)new_generating(e, close_model_in_token, &c);
  run_engine(e);
  EXPECT(c.freed);
  EXPECT(c.calls == 16);
  brisk_engine_free(e);
}

static void wrong_and_foreign_handles(brisk_model *m) {
  brisk_session *s = new_session(m);
  brisk_engine *e = new_engine(m, 1);
  uint64_t zeros[16];
  memset(zeros, 0, sizeof zeros);
  EXPECT_ERROR(brisk_engine_step((brisk_engine *)s, NULL), BRISK_ERR_INVALID_ARGUMENT, "brisk_session");
  EXPECT_ERROR(brisk_session_reset((brisk_session *)e), BRISK_ERR_INVALID_ARGUMENT, "brisk_engine");
  EXPECT_ERROR(brisk_sequence_add_tokens((brisk_sequence *)m, NULL, 0), BRISK_ERR_INVALID_ARGUMENT, "brisk_model");
  EXPECT_ERROR(brisk_session_reset((brisk_session *)zeros), BRISK_ERR_INVALID_ARGUMENT, "not a brisk_session");
  EXPECT_ERROR(brisk_engine_step(NULL, NULL), BRISK_ERR_INVALID_ARGUMENT, "NULL");
  brisk_engine_free((brisk_engine *)s); /* refused: not an engine */
  EXPECT(strstr(brisk_last_error(), "brisk_session") != NULL);
  EXPECT(brisk_session_position(s) == 3); /* untouched */
  brisk_session_free(s);
  brisk_engine_free(e);
}

static void results_freed_twice(brisk_model *m) {
  brisk_ppl_options po;
  brisk_ppl_result *r = NULL;
  const char *text = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen";
  double v = 0;
  brisk_ppl_options_init(&po);
  po.n_ctx = 8;
  po.n_threads = 1;
  EXPECT(brisk_perplexity(m, NULL, text, strlen(text), &po, &r) == BRISK_OK);
  brisk_ppl_result_free(r);
  EXPECT_ERROR(brisk_ppl_result_value(r, "ppl", &v), BRISK_ERR_INVALID_ARGUMENT, "already freed");
  brisk_ppl_result_free(r);
  EXPECT(strstr(brisk_last_error(), "already freed") != NULL);
}

int main(void) {
  brisk_model *m = open_model();
  session_freed_inside_its_token_callback(m);
  session_freed_inside_its_abort_callback(m);
  engine_freed_inside_a_token_callback(m);
  engine_freed_inside_its_abort_callback(m);
  sequence_freed_after_its_engine(m);
  sequence_freed_inside_its_own_callback(m);
  wrong_and_foreign_handles(m);
  results_freed_twice(m);
  brisk_model_close(m);
  brisk_model_close(m);
  EXPECT(strstr(brisk_last_error(), "freed") != NULL);
  model_closed_with_live_session_and_engine();
  model_closed_inside_a_token_callback();
  if (failures) {
    fprintf(stderr, "%d failure(s)\n", failures);
    return 1;
  }
  printf("lifetimes: every wrong-order free and in-callback free gave an error or was deferred\n");
  return 0;
}
