/* C side of the Go binding: installs the exported Go trampolines as brisk
 * callbacks. user_data is a cgo.Handle (an integer), never a Go pointer. */
#ifndef BRISK_GO_BRIDGE_H
#define BRISK_GO_BRIDGE_H
#include <stdint.h>
#include <brisk/brisk.h>

void brisk_go_model_log(brisk_model_options *o, uintptr_t handle);
void brisk_go_session_abort(brisk_session_options *o, uintptr_t handle);
void brisk_go_engine_abort(brisk_engine_options *o, uintptr_t handle);
void brisk_go_generate_token(brisk_generate_options *o, uintptr_t handle);

/* cgo cannot call function-like macros: the options_init macros, as functions. */
static inline void brisk_go_model_options_init(brisk_model_options *o) { brisk_model_options_init(o); }
static inline void brisk_go_session_options_init(brisk_session_options *o) { brisk_session_options_init(o); }
static inline void brisk_go_sampler_options_init(brisk_sampler_options *o) { brisk_sampler_options_init(o); }
static inline void brisk_go_generate_options_init(brisk_generate_options *o) { brisk_generate_options_init(o); }
static inline void brisk_go_engine_options_init(brisk_engine_options *o) { brisk_engine_options_init(o); }
static inline void brisk_go_synthesize_options_init(brisk_synthesize_options *o) { brisk_synthesize_options_init(o); }

#endif
