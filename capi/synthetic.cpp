// SPDX-License-Identifier: MIT
// brisk_synthesize_model and friends.
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "guard.h"
#include "handles.h"
#include "model/synthetic.h"

using brisk::capi::guard;
using brisk::capi::require;

extern "C" {

static void fill_synthesize_options(brisk_synthesize_options* o) {
  if (!o) return;
  *o = brisk_synthesize_options{};
  o->struct_size = sizeof(*o);
  o->shape = "tiny";
  o->weight_type = "q4_0";
}

brisk_status brisk_synthesize_model(const char* path, const brisk_synthesize_options* options) {
  return guard([&] {
    require(path, "path");
    brisk_synthesize_options o = brisk::capi::merge_options(options, [](brisk_synthesize_options* p) { brisk_synthesize_options_init(p); });
    require(o.shape, "shape");
    require(o.weight_type, "weight_type");
    brisk::TensorType t;
    if (!brisk::parse_type_name(o.weight_type, &t))
      brisk::fail(BRISK_ERR_INVALID_ARGUMENT, std::string("unknown weight type '") + o.weight_type + "'");
    brisk::write_synthetic_model(brisk::find_synthetic_shape(o.shape), t, o.seed, path,
                                 static_cast<int>(o.n_threads));
  });
}

brisk_status brisk_model_open_synthetic(const brisk_synthesize_options* synth, const brisk_model_options* options,
                                        brisk_model** out) {
  return guard([&] {
    require(out, "out_model");
    *out = nullptr;
    // tmpfs when the machine has it (memory, not disk); the file is unlinked
    // as soon as it is mapped, so it disappears with the process. It lives in
    // a private directory (mkdtemp: unique, mode 0700), so nobody else can
    // plant or swap the file between writing and opening it.
    const char* base = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    std::string dir = std::string(base) + "/brisk-synthetic-XXXXXX";
    if (!::mkdtemp(dir.data())) brisk::fail(BRISK_ERR_IO, "cannot create a temporary directory in " + std::string(base));
    const std::string path = dir + "/model.gguf";
    brisk_status st = brisk_synthesize_model(path.c_str(), synth);
    if (st == BRISK_OK) st = brisk_model_open(path.c_str(), options, out);
    const std::string err = st != BRISK_OK ? brisk_last_error() : "";
    std::remove(path.c_str());
    ::rmdir(dir.c_str());
    if (st != BRISK_OK) brisk::fail(st, err);
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

extern "C" {
void brisk_synthesize_options_init_sized(brisk_synthesize_options* o, size_t size) {
  brisk::capi::init_sized(o, size, fill_synthesize_options);
}
}  // extern "C"
