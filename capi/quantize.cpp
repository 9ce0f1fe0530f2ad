// brisk_quantize: options in, lib/quantize (and calibration/ for the
// calibrated paths) underneath.
#include <string>

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
  wire_callbacks(o, q);
  quantize::quantize_model(in, out, q);
}

}  // namespace brisk::capi

extern "C" {

void brisk_quantize_options_init(brisk_quantize_options* o) {
  if (!o) return;
  *o = brisk_quantize_options{};
  o->struct_size = sizeof(*o);
  o->type = "q8_0";
}

brisk_status brisk_quantize(const char* in, const char* out, const brisk_quantize_options* options) {
  return guard([&] {
    require(in, "input_path");
    require(out, "output_path");
    const brisk_quantize_options o = brisk::capi::merge_options(options, brisk_quantize_options_init);
    if (o.n_threads > 4096) brisk::fail(BRISK_ERR_INVALID_ARGUMENT, "n_threads out of range");
    brisk::capi::run_quantize(in, out, o);
  });
}

}  // extern "C"
