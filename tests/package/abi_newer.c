/* SPDX-License-Identifier: MIT */
/* A program built against the newest brisk.h that calls a function of the
 * newest ABI minor that added functions (brisk_sequence_resume, added in
 * 0.7). tests/package/abi_refusal.sh runs it against this build's libbrisk
 * (it works) and against one that lacks that symbol version node (the
 * loader must refuse it before main). */
#include <brisk/brisk.h>
#include <stdio.h>

int main(void) {
  /* No sequence: the call must refuse it by status, not crash. */
  brisk_status st = brisk_sequence_resume(NULL, NULL);
  printf("libbrisk %s: brisk_sequence_resume(NULL) = %s\n", brisk_version(), brisk_status_name(st));
  return st == BRISK_ERR_INVALID_ARGUMENT ? 0 : 1;
}
