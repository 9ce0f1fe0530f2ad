// SPDX-License-Identifier: MIT
// brisk_quantize: options in, lib/quantize (and calibration/ for the
// calibrated paths) underneath.
#include <string>

#include "calibration/calibrated.h"
#include "guard.h"
#include "handles.h"
#include "quantize/quantize.h"

using brisk::capi::guard;
using brisk::capi::require;

namespace brisk::capi {

std::vector<quantize::TypeOverride> parse_overrides(const char* const* items, size_t n) {
  std::vector<quantize::TypeOverride> out;
  for (size_t i = 0; i < n; ++i) {
    require(items, "tensor_types");
    require(items[i], "tensor_types[i]");
    const std::string s = items[i];
    const size_t eq = s.rfind('=');
    TensorType t;
    if (eq == std::string::npos || eq == 0 || !parse_type_name(s.substr(eq + 1), &t))
      fail(BRISK_ERR_INVALID_ARGUMENT, "tensor type override '" + s + "' is not REGEX=TYPE with a known type");
    out.push_back({s.substr(0, eq), t});
  }
  return out;
}

void wire_callbacks(const brisk_quantize_options& o, quantize::QuantizeOptions& q) {
  q.on_tensor = [&o](size_t i, size_t n, const quantize::TensorPlan& t) {
    if (o.tensor_fn)
      o.tensor_fn(o.tensor_user_data, t.name.c_str(), static_cast<int32_t>(t.src_type), static_cast<int32_t>(t.type),
                  static_cast<uint64_t>(t.n_elements()), t.bytes(), t.why.c_str());
    if (o.abort_fn && o.abort_fn(o.abort_user_data)) return false;
    if (o.progress_fn && o.progress_fn(o.progress_user_data, "quantize", i, n, t.name.c_str())) return false;
    return true;
  };
  q.warn = [&o](const std::string& msg) {
    if (o.log_fn) o.log_fn(o.log_user_data, BRISK_LOG_WARN, msg.c_str());
  };
}

void run_quantize(const char* in, const char* out, const brisk_quantize_options& o) {
  quantize::QuantizeOptions q;
  require(o.type, "type");
  q.preset = o.type;
  q.plan.overrides = parse_overrides(o.tensor_types, o.n_tensor_types);
  q.n_threads = static_cast<int>(o.n_threads);
  q.input = map_options_of(o);
  wire_callbacks(o, q);
  if (!o.calibration) {
    if (o.target_size || o.target_bpw > 0 || o.eval_file)
      fail(BRISK_ERR_INVALID_ARGUMENT, "a size target or evaluation needs calibration statistics");
    quantize::quantize_model(in, out, q);
    return;
  }
  calib::CalibratedOptions c;
  c.quant = q;
  c.stats_path = o.calibration;
  if (!(o.target_bpw >= 0 && o.target_bpw <= 32)) fail(BRISK_ERR_INVALID_ARGUMENT, "target_bpw out of range");
  if (o.target_size && o.target_bpw > 0) fail(BRISK_ERR_INVALID_ARGUMENT, "give target_size or target_bpw, not both");
  c.target_size = o.target_size;
  c.target_bpw = o.target_bpw;
  c.measure_kl = o.sensitivity_proxy_only == 0;
  c.sensitivity_tokens = o.sensitivity_tokens ? o.sensitivity_tokens : 1024;
  c.report = o.report != 0;
  if (o.eval_file) c.eval_file = o.eval_file;
  for (size_t i = 0; i < o.n_calibration_data; ++i) {
    require(o.calibration_data, "calibration_data");
    require(o.calibration_data[i], "calibration_data[i]");
    c.data_paths.push_back(o.calibration_data[i]);
  }
  c.eval_on_calib = o.eval_on_calib != 0;
  c.eval_max_chunks = o.eval_max_chunks == 0 ? 64 : o.eval_max_chunks == UINT32_MAX ? 0 : static_cast<int>(o.eval_max_chunks);
  c.progress = [&o](const char* stage, uint64_t done, uint64_t total, const std::string& what) {
    if (o.abort_fn && o.abort_fn(o.abort_user_data)) return false;
    return !(o.progress_fn && o.progress_fn(o.progress_user_data, stage, done, total, what.c_str()));
  };
  c.warn = q.warn;
  calib::quantize_calibrated(in, out, c);
}

}  // namespace brisk::capi

extern "C" {

static void fill_quantize_options(brisk_quantize_options* o) {
  if (!o) return;
  *o = brisk_quantize_options{};
  o->struct_size = sizeof(*o);
  o->type = "q8_0";
  o->report = 1;
}

brisk_status brisk_quantize(const char* in, const char* out, const brisk_quantize_options* options) {
  return guard([&] {
    require(in, "input_path");
    require(out, "output_path");
    const brisk_quantize_options o = brisk::capi::merge_options(options, [](brisk_quantize_options* p) { brisk_quantize_options_init(p); });
    if (o.n_threads > 4096) brisk::fail(BRISK_ERR_INVALID_ARGUMENT, "n_threads out of range");
    brisk::capi::run_quantize(in, out, o);
  });
}

}  // extern "C"

extern "C" {
void brisk_quantize_options_init_sized(brisk_quantize_options* o, size_t size) {
  brisk::capi::init_sized(o, size, fill_quantize_options);
}
}  // extern "C"
