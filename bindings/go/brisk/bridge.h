// SPDX-License-Identifier: MIT
/* C side of the Go binding: installs the exported Go trampolines as brisk
 * callbacks. user_data is a cgo.Handle (an integer), never a Go pointer. */
#ifndef BRISK_GO_BRIDGE_H
#define BRISK_GO_BRIDGE_H
#include <stdint.h>
#include <brisk/brisk.h>
/* The quality tools' string-keyed results are experimental: declared in
 * their own header where there is one. */
#if defined(__has_include)
#if __has_include(<brisk/brisk_experimental.h>)
#include <brisk/brisk_experimental.h>
#endif
#endif
/* ...and declared again here (an identical redeclaration is valid C), so
 * that the binding builds whichever header carries them, and however the
 * experimental one is enabled. */
typedef struct brisk_ppl_result brisk_ppl_result;
typedef struct brisk_compare_result brisk_compare_result;
brisk_status brisk_ppl_result_value(const brisk_ppl_result *result, const char *key, double *out_value);
brisk_status brisk_ppl_result_json(const brisk_ppl_result *result, char *buf, size_t cap, size_t *needed);
brisk_status brisk_compare_result_value(const brisk_compare_result *result, const char *key, double *out_value);
brisk_status brisk_compare_result_json(const brisk_compare_result *result, char *buf, size_t cap, size_t *needed);
brisk_status brisk_engine_read_bandwidth(brisk_engine *engine, uint64_t bytes, uint32_t passes,
                                         double *out_median_gb_per_s, double *out_min_gb_per_s,
                                         double *out_max_gb_per_s);

void brisk_go_model_log(brisk_model_options *o, uintptr_t handle);
void brisk_go_session_abort(brisk_session_options *o, uintptr_t handle);
void brisk_go_engine_abort(brisk_engine_options *o, uintptr_t handle);
void brisk_go_generate_token(brisk_generate_options *o, uintptr_t handle);

/* Toolchain calls: one cgo.Handle is the user_data of every callback of the
 * call; `which` says which of them to install. */
enum {
  BRISK_GO_PROGRESS = 1,
  BRISK_GO_ABORT = 2,
  BRISK_GO_LOG = 4,
  BRISK_GO_MISMATCH = 8,
  BRISK_GO_TENSOR = 16
};
void brisk_go_convert_hooks(brisk_convert_options *o, uintptr_t handle, unsigned which);
void brisk_go_verify_hooks(brisk_verify_options *o, uintptr_t handle, unsigned which);
void brisk_go_pack_hooks(brisk_pack_options *o, uintptr_t handle, unsigned which);
void brisk_go_quantize_hooks(brisk_quantize_options *o, uintptr_t handle, unsigned which);
void brisk_go_calibrate_hooks(brisk_calibrate_options *o, uintptr_t handle, unsigned which);
void brisk_go_ppl_hooks(brisk_ppl_options *o, uintptr_t handle, unsigned which);
void brisk_go_compare_hooks(brisk_compare_options *o, uintptr_t handle, unsigned which);
/* brisk doctor (experimental; its options need brisk_experimental.h): it
 * has no abort callback, so the progress trampoline is installed for
 * BRISK_GO_PROGRESS or BRISK_GO_ABORT and reports cancellation too. */
void brisk_go_doctor_hooks(brisk_doctor_options *o, uintptr_t handle, unsigned which);

/* cgo cannot call function-like macros: the options_init macros, as functions. */
static inline void brisk_go_model_options_init(brisk_model_options *o) { brisk_model_options_init(o); }
static inline void brisk_go_session_options_init(brisk_session_options *o) { brisk_session_options_init(o); }
static inline void brisk_go_sampler_options_init(brisk_sampler_options *o) { brisk_sampler_options_init(o); }
static inline void brisk_go_generate_options_init(brisk_generate_options *o) { brisk_generate_options_init(o); }
static inline void brisk_go_engine_options_init(brisk_engine_options *o) { brisk_engine_options_init(o); }
static inline void brisk_go_synthesize_options_init(brisk_synthesize_options *o) { brisk_synthesize_options_init(o); }
static inline void brisk_go_convert_options_init(brisk_convert_options *o) { brisk_convert_options_init(o); }
static inline void brisk_go_verify_options_init(brisk_verify_options *o) { brisk_verify_options_init(o); }
static inline void brisk_go_pack_options_init(brisk_pack_options *o) { brisk_pack_options_init(o); }
static inline void brisk_go_quantize_options_init(brisk_quantize_options *o) { brisk_quantize_options_init(o); }
static inline void brisk_go_calibrate_options_init(brisk_calibrate_options *o) { brisk_calibrate_options_init(o); }
static inline void brisk_go_ppl_options_init(brisk_ppl_options *o) { brisk_ppl_options_init(o); }
static inline void brisk_go_compare_options_init(brisk_compare_options *o) { brisk_compare_options_init(o); }
static inline void brisk_go_chat_options_init(brisk_chat_options *o) { brisk_chat_options_init(o); }
static inline void brisk_go_doctor_options_init(brisk_doctor_options *o) { brisk_doctor_options_init(o); }

#endif
