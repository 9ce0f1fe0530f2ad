/* SPDX-License-Identifier: MIT */
/* A program built against the newest brisk.h that calls a function of the
 * newest ABI minor that added functions (brisk_model_kernel_plan, added in
 * 0.5; 0.6 only grew option structs). tests/package/abi_refusal.sh runs it
 * against this build's libbrisk (it works) and against one that lacks that
 * symbol version node (the loader must refuse it before main). */
#include <brisk/brisk.h>
#include <stdio.h>

int main(void) {
  size_t needed = 0;
  char buf[16];
  /* No model: the call must refuse it by status, not crash. */
  brisk_status st = brisk_model_kernel_plan(NULL, buf, sizeof buf, &needed);
  printf("libbrisk %s: brisk_model_kernel_plan(NULL) = %s\n", brisk_version(), brisk_status_name(st));
  return st == BRISK_ERR_INVALID_ARGUMENT ? 0 : 1;
}
