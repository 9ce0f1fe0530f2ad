// SPDX-License-Identifier: MIT
// brisk_calibrate over calibration/calibrate.
#include <string>

#include "calibration/calibrate.h"
#include "guard.h"
#include "handles.h"

using brisk::capi::guard;
using brisk::capi::require;

extern "C" {

static void fill_calibrate_options(brisk_calibrate_options* o) {
  if (!o) return;
  *o = brisk_calibrate_options{};
  o->struct_size = sizeof(*o);
  o->jsonl_field = "text";
  o->holdout = 0.1f;
  o->checkpoint_seconds = 60;
}

brisk_status brisk_calibrate(const char* model_path, const char* out_path, const brisk_calibrate_options* options) {
  return guard([&] {
    require(model_path, "model_path");
    require(out_path, "output_path");
    const brisk_calibrate_options o = brisk::capi::merge_options(options, [](brisk_calibrate_options* p) { brisk_calibrate_options_init(p); });
    if (o.n_data_paths == 0) brisk::fail(BRISK_ERR_INVALID_ARGUMENT, "no calibration data given (data_paths)");
    require(o.data_paths, "data_paths");
    if (!(o.holdout >= 0 && o.holdout < 1) || o.n_ctx > (1u << 20) || o.n_threads > 4096)
      brisk::fail(BRISK_ERR_INVALID_ARGUMENT, "calibration options out of range (holdout must be in [0, 1))");
    brisk::calib::CalibrateOptions c;
    for (size_t i = 0; i < o.n_data_paths; ++i) {
      require(o.data_paths[i], "data_paths[i]");
      c.data.emplace_back(o.data_paths[i]);
    }
    c.data_options.jsonl_field = o.jsonl_field ? o.jsonl_field : "text";
    c.data_options.holdout = o.holdout;
    c.n_ctx = static_cast<int>(o.n_ctx);
    c.max_tokens = o.max_tokens;
    c.resume = o.resume != 0;
    c.n_threads = static_cast<int>(o.n_threads);
    c.input = brisk::capi::map_options_of(o);
    c.checkpoint_seconds = o.checkpoint_seconds ? o.checkpoint_seconds : 60;
    c.progress = [&o](uint64_t done, uint64_t total) {
      if (o.abort_fn && o.abort_fn(o.abort_user_data)) return false;
      return !(o.progress_fn && o.progress_fn(o.progress_user_data, "calibrate", done, total, ""));
    };
    c.log = [&o](const std::string& m) {
      if (o.log_fn) o.log_fn(o.log_user_data, BRISK_LOG_INFO, m.c_str());
    };
    brisk::calib::calibrate(model_path, out_path, c);
  });
}

}  // extern "C"

extern "C" {
void brisk_calibrate_options_init_sized(brisk_calibrate_options* o, size_t size) {
  brisk::capi::init_sized(o, size, fill_calibrate_options);
}
}  // extern "C"
