/* SPDX-License-Identifier: MIT */
#include "bridge.h"

#include "_cgo_export.h"

/* brisk's callback types take const pointers, which cgo cannot export. */
static void log_trampoline(void *user_data, brisk_log_level level, const char *message) {
  briskGoLog((uintptr_t)user_data, (int)level, (char *)message);
}
static int abort_trampoline(void *user_data) { return briskGoAbort((uintptr_t)user_data); }
static int token_trampoline(void *user_data, int32_t token, const char *text, size_t len) {
  return briskGoToken((uintptr_t)user_data, token, (char *)text, len);
}

void brisk_go_model_log(brisk_model_options *o, uintptr_t h) {
  o->log_fn = h ? log_trampoline : NULL;
  o->log_user_data = (void *)h;
}
void brisk_go_session_abort(brisk_session_options *o, uintptr_t h) {
  o->abort_fn = h ? abort_trampoline : NULL;
  o->abort_user_data = (void *)h;
}
void brisk_go_engine_abort(brisk_engine_options *o, uintptr_t h) {
  o->abort_fn = h ? abort_trampoline : NULL;
  o->abort_user_data = (void *)h;
}
void brisk_go_generate_token(brisk_generate_options *o, uintptr_t h) {
  o->token_fn = h ? token_trampoline : NULL;
  o->token_user_data = (void *)h;
}

/* ---- toolchain calls ---- */
static int progress_trampoline(void *user_data, const char *stage, uint64_t done, uint64_t total, const char *detail) {
  return briskGoHookProgress((uintptr_t)user_data, (char *)stage, done, total, (char *)detail);
}
static int hook_abort_trampoline(void *user_data) { return briskGoHookAbort((uintptr_t)user_data); }
static void hook_log_trampoline(void *user_data, brisk_log_level level, const char *message) {
  briskGoHookLog((uintptr_t)user_data, (int)level, (char *)message);
}
static void mismatch_trampoline(void *user_data, const char *where, const char *detail) {
  briskGoHookMismatch((uintptr_t)user_data, (char *)where, (char *)detail);
}
static void tensor_trampoline(void *user_data, const char *name, int32_t src_type, int32_t type, uint64_t n_elements,
                              uint64_t bytes, const char *why) {
  briskGoHookTensor((uintptr_t)user_data, (char *)name, src_type, type, n_elements, bytes, (char *)why);
}

#define SET_HOOK(o, field, bit, fn, h, which)    \
  do {                                           \
    if ((which) & (bit)) {                       \
      (o)->field##_fn = fn;                      \
      (o)->field##_user_data = (void *)(h);      \
    }                                            \
  } while (0)
#define PROGRESS_ABORT(o, h, which)                                         \
  SET_HOOK(o, progress, BRISK_GO_PROGRESS, progress_trampoline, h, which); \
  SET_HOOK(o, abort, BRISK_GO_ABORT, hook_abort_trampoline, h, which)

void brisk_go_convert_hooks(brisk_convert_options *o, uintptr_t h, unsigned which) {
  PROGRESS_ABORT(o, h, which);
  SET_HOOK(o, log, BRISK_GO_LOG, hook_log_trampoline, h, which);
}
void brisk_go_verify_hooks(brisk_verify_options *o, uintptr_t h, unsigned which) {
  PROGRESS_ABORT(o, h, which);
  SET_HOOK(o, mismatch, BRISK_GO_MISMATCH, mismatch_trampoline, h, which);
}
void brisk_go_pack_hooks(brisk_pack_options *o, uintptr_t h, unsigned which) {
  PROGRESS_ABORT(o, h, which);
  SET_HOOK(o, log, BRISK_GO_LOG, hook_log_trampoline, h, which);
}
void brisk_go_quantize_hooks(brisk_quantize_options *o, uintptr_t h, unsigned which) {
  PROGRESS_ABORT(o, h, which);
  SET_HOOK(o, log, BRISK_GO_LOG, hook_log_trampoline, h, which);
  SET_HOOK(o, tensor, BRISK_GO_TENSOR, tensor_trampoline, h, which);
}
void brisk_go_calibrate_hooks(brisk_calibrate_options *o, uintptr_t h, unsigned which) {
  PROGRESS_ABORT(o, h, which);
  SET_HOOK(o, log, BRISK_GO_LOG, hook_log_trampoline, h, which);
}
void brisk_go_ppl_hooks(brisk_ppl_options *o, uintptr_t h, unsigned which) { PROGRESS_ABORT(o, h, which); }
void brisk_go_compare_hooks(brisk_compare_options *o, uintptr_t h, unsigned which) { PROGRESS_ABORT(o, h, which); }
void brisk_go_doctor_hooks(brisk_doctor_options *o, uintptr_t h, unsigned which) {
  SET_HOOK(o, progress, BRISK_GO_PROGRESS | BRISK_GO_ABORT, progress_trampoline, h, which);
}
