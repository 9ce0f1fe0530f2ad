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
