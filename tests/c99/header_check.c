/* SPDX-License-Identifier: MIT */
/* Compiled as C99 with -Wall -Wextra -pedantic -Werror: brisk.h and
 * brisk_experimental.h are plain C.
 * Running it checks the basic calls a C program makes without a model. */
#include <brisk/brisk.h>
#include <brisk/brisk_experimental.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  brisk_model *model = NULL;
  brisk_model_options mo;
  brisk_status st;
  brisk_model_options_init(&mo);
  if (mo.struct_size != sizeof mo) return 1;
  if (strcmp(brisk_version(), "") == 0) return 2;
  if ((brisk_abi_version() >> 16) != BRISK_ABI_VERSION_MAJOR) return 3;
  st = brisk_model_open("/nonexistent/model.gguf", &mo, &model);
  if (st != BRISK_ERR_NOT_FOUND || model != NULL) return 4;
  if (strstr(brisk_last_error(), "/nonexistent/model.gguf") == NULL) return 5;
  st = brisk_model_open(NULL, NULL, &model);
  if (st != BRISK_ERR_INVALID_ARGUMENT) return 6;
  printf("brisk %s from C99: ok (%s)\n", brisk_version(), brisk_status_name(st));
  return 0;
}
