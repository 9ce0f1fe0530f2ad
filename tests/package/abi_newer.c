/* SPDX-License-Identifier: MIT */
/* A program built against the newest brisk.h that calls a function of the
 * newest ABI minor that added functions (brisk_model_decode_bytes, added in
 * 0.8). tests/package/abi_refusal.sh runs it against this build's libbrisk
 * (it works) and against one that lacks that symbol version node (the
 * loader must refuse it before main). */
#include <brisk/brisk.h>
#include <stdio.h>

int main(void) {
  /* No model: the call must answer 0, not crash. */
  unsigned long long bytes = (unsigned long long)brisk_model_decode_bytes(NULL);
  printf("libbrisk %s: brisk_model_decode_bytes(NULL) = %llu\n", brisk_version(), bytes);
  return bytes == 0 ? 0 : 1;
}
