// SPDX-License-Identifier: MIT
// brisk_convert_*: Hugging Face and llama2.c checkpoints to GGUF.
#include <string>

#include "converters/convert.h"
#include "converters/model_writer.h"
#include "guard.h"
#include "handles.h"
#include "job.h"

using brisk::capi::guard;
using brisk::capi::require;

namespace {

brisk::convert::ConvertOptions to_internal(const brisk_convert_options& o) {
  brisk::convert::ConvertOptions c;
  if (o.type != BRISK_TYPE_AUTO) {
    c.auto_type = false;
    c.type = static_cast<brisk::TensorType>(o.type);
    if (o.type < 0 || !brisk::convert::can_convert_to(c.type))
      brisk::fail(BRISK_ERR_INVALID_ARGUMENT, "cannot convert to type " + std::to_string(o.type) +
                                                  " (f32, f16, bf16, q8_0, q4_0, q4_1, q4_k, q5_k, q6_k)");
  }
  if (o.name) c.name = o.name;
  c.input = brisk::capi::map_options_of(o);
  return c;
}

brisk::bundle::Job job_of(const brisk_convert_options& o) {
  return brisk::capi::make_job("convert", o.n_threads, o.progress_fn, o.progress_user_data, o.abort_fn, o.abort_user_data,
                               o.log_fn, o.log_user_data);
}

}  // namespace

extern "C" {

static void fill_convert_options(brisk_convert_options* o) {
  if (!o) return;
  *o = brisk_convert_options{};
  o->struct_size = sizeof(*o);
  o->type = BRISK_TYPE_AUTO;
}

brisk_status brisk_convert_hf(const char* dir, const char* out, const brisk_convert_options* options) {
  return guard([&] {
    require(dir, "hf_dir");
    require(out, "out_path");
    const brisk_convert_options o = brisk::capi::merge_options(options, [](brisk_convert_options* p) { brisk_convert_options_init(p); });
    brisk::convert::convert_hf(dir, out, to_internal(o), job_of(o));
  });
}

brisk_status brisk_convert_llama2c(const char* model, const char* tokenizer, const char* out,
                                   const brisk_convert_options* options) {
  return guard([&] {
    require(model, "model_path");
    require(tokenizer, "tokenizer_path");
    require(out, "out_path");
    const brisk_convert_options o = brisk::capi::merge_options(options, [](brisk_convert_options* p) { brisk_convert_options_init(p); });
    brisk::convert::convert_llama2c(model, tokenizer, out, to_internal(o), job_of(o));
  });
}

}  // extern "C"

extern "C" {
void brisk_convert_options_init_sized(brisk_convert_options* o, size_t size) {
  brisk::capi::init_sized(o, size, fill_convert_options);
}
}  // extern "C"
