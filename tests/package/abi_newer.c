/* SPDX-License-Identifier: MIT */
/* A program built against the newest brisk.h that calls a function of the
 * newest ABI minor (brisk_type_name, added in 0.4). tests/package/
 * abi_refusal.sh runs it against this build's libbrisk (it works) and
 * against one that lacks the newest symbol version node (the loader must
 * refuse it before main). */
#include <brisk/brisk.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  const char *name = brisk_type_name(BRISK_TYPE_Q4_0);
  printf("libbrisk %s: brisk_type_name(BRISK_TYPE_Q4_0) = %s\n", brisk_version(), name ? name : "(null)");
  return name && strcmp(name, "q4_0") == 0 ? 0 : 1;
}
