// brisk_synthesize_model and friends.
#include <string>

#include "guard.h"
#include "handles.h"
#include "model/synthetic.h"

using brisk::capi::guard;
using brisk::capi::require;

extern "C" {

void brisk_synthesize_options_init(brisk_synthesize_options* o) {
  if (!o) return;
  *o = brisk_synthesize_options{};
  o->struct_size = sizeof(*o);
  o->shape = "tiny";
  o->weight_type = "q4_0";
}

brisk_status brisk_synthesize_model(const char* path, const brisk_synthesize_options* options) {
  return guard([&] {
    require(path, "path");
    brisk_synthesize_options o = brisk::capi::merge_options(options, brisk_synthesize_options_init);
    require(o.shape, "shape");
    require(o.weight_type, "weight_type");
    brisk::TensorType t;
    if (!brisk::parse_type_name(o.weight_type, &t))
      brisk::fail(BRISK_ERR_INVALID_ARGUMENT, std::string("unknown weight type '") + o.weight_type + "'");
    brisk::write_synthetic_model(brisk::find_synthetic_shape(o.shape), t, o.seed, path,
                                 static_cast<int>(o.n_threads));
  });
}

brisk_status brisk_synthetic_shapes(char* buf, size_t cap, size_t* needed) {
  return guard([&] {
    std::string names;
    for (const brisk::SyntheticShape& s : brisk::synthetic_shapes()) names += (names.empty() ? "" : ",") + s.name;
    brisk::capi::copy_text_out(names, buf, cap, needed);
  });
}

}  // extern "C"
