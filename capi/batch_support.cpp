// SPDX-License-Identifier: MIT
// brisk_model_identity: what `brisk batch` and saved states use to tie
// their files to a model.
#include "guard.h"
#include "handles.h"
#include "model/identity.h"

using brisk::capi::copy_text_out;
using brisk::capi::guard;
using brisk::capi::require;

extern "C" {

brisk_status brisk_model_identity(const brisk_model* m, char* buf, size_t cap, size_t* needed) {
  return guard([&] {
    brisk::capi::checked(m, "model");
    copy_text_out(brisk::model_identity(m->model->file()), buf, cap, needed);
  });
}

}  // extern "C"
