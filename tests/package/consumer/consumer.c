/* SPDX-License-Identifier: MIT */
/* A program as a user would write it against an installed brisk: built by
 * tests/package/install_check.sh with find_package(brisk) and with
 * pkg-config, outside the source tree. It checks that the header and the
 * library it was linked with agree, then generates from a tiny synthetic
 * model (no data files needed). */
#include <brisk/brisk.h>
#include <stdio.h>
#include <string.h>

static int fail(const char *what, brisk_status st) {
  fprintf(stderr, "%s: %s: %s\n", what, brisk_status_name(st), brisk_last_error());
  return 1;
}

int main(void) {
  char want[32];
  brisk_synthesize_options synth;
  brisk_model *model = NULL;
  brisk_session *session = NULL;
  brisk_sampler *sampler = NULL;
  brisk_session_options so;
  brisk_generate_options go;
  brisk_type type;
  size_t n = 0;
  int32_t bos;
  brisk_status st;

  snprintf(want, sizeof want, "%d.%d.%d", BRISK_VERSION_MAJOR, BRISK_VERSION_MINOR, BRISK_VERSION_PATCH);
  if (strcmp(brisk_version(), want) != 0 ||
      brisk_abi_version() != (((uint32_t)BRISK_ABI_VERSION_MAJOR << 16) | BRISK_ABI_VERSION_MINOR)) {
    fprintf(stderr, "header %s, library %s\n", want, brisk_version());
    return 1;
  }
  if ((st = brisk_type_from_name("q8_0", &type)) != BRISK_OK) return fail("brisk_type_from_name", st);

  brisk_synthesize_options_init(&synth);
  synth.shape = "tiny";
  synth.weight_type = brisk_type_name(type);
  if ((st = brisk_model_open_synthetic(&synth, NULL, &model)) != BRISK_OK) return fail("open", st);
  brisk_session_options_init(&so);
  so.n_threads = 1;
  so.n_ctx = 64;
  if ((st = brisk_session_create(model, &so, &session)) != BRISK_OK) return fail("session", st);
  if ((st = brisk_sampler_create(NULL, &sampler)) != BRISK_OK) return fail("sampler", st);
  bos = brisk_model_token_bos(model);
  if ((st = brisk_session_eval(session, &bos, 1)) != BRISK_OK) return fail("eval", st);
  brisk_generate_options_init(&go);
  go.max_tokens = 8;
  go.stop_at_eos = 0;
  if ((st = brisk_generate(session, sampler, &go, &n, NULL)) != BRISK_OK) return fail("generate", st);
  printf("brisk %s: generated %zu tokens\n", brisk_version(), n);
  brisk_sampler_free(sampler);
  brisk_session_free(session);
  brisk_model_close(model);
  return n == 8 ? 0 : 1;
}
