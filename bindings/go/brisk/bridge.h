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
#endif
