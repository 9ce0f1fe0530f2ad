// SPDX-License-Identifier: MIT
// brisk_doctor_*: the system checks of `brisk doctor` for any program.
#include "guard.h"
#include "handles.h"
#include "system/doctor.h"

using brisk::capi::copy_text_out;
using brisk::capi::guard;
using brisk::capi::require;

struct brisk_doctor_report {
  std::string json;
};

extern "C" {

static void fill_doctor_options(brisk_doctor_options* o) {
  *o = brisk_doctor_options{};
  o->struct_size = sizeof(*o);
  o->load_seconds = 20;
  o->measure = 1;
}

void brisk_doctor_options_init_sized(brisk_doctor_options* o, size_t size) {
  brisk::capi::init_sized(o, size, fill_doctor_options);
}

brisk_status brisk_doctor_run(const brisk_doctor_options* options, brisk_doctor_report** out) {
  return guard([&] {
    require(out, "out_report");
    *out = nullptr;
    const brisk_doctor_options o =
        brisk::capi::merge_options(options, [](brisk_doctor_options* p) { brisk_doctor_options_init(p); });
    if (!(o.load_seconds >= 0 && o.load_seconds <= 3600) || o.n_threads > 4096)
      brisk::fail(BRISK_ERR_INVALID_ARGUMENT, "doctor options out of range (load_seconds 0..3600)");
    brisk::sys::DoctorOptions d;
    d.root = o.root ? o.root : "";
    while (d.root.size() > 1 && d.root.back() == '/') d.root.pop_back();
    if (d.root == "/") d.root.clear();
    d.model_path = o.model_path ? o.model_path : "";
    d.n_threads = static_cast<int>(o.n_threads);
    d.load_seconds = o.load_seconds;
    d.measure = o.measure != 0;
    bool cancelled = false;
    if (o.progress_fn) {
      d.progress = [&](double done, double total) {
        cancelled = cancelled || o.progress_fn(o.progress_user_data, "doctor", static_cast<uint64_t>(done),
                                               static_cast<uint64_t>(total), "load test") != 0;
        return cancelled;
      };
    }
    auto r = std::make_unique<brisk_doctor_report>();
    r->json = brisk::sys::doctor(d).dump(2);
    if (cancelled) brisk::fail(BRISK_ERR_CANCELLED, "doctor cancelled");
    *out = r.release();
  });
}

brisk_status brisk_doctor_report_json(const brisk_doctor_report* r, char* buf, size_t cap, size_t* needed) {
  return guard([&] {
    require(r, "report");
    copy_text_out(r->json, buf, cap, needed);
  });
}

void brisk_doctor_report_free(brisk_doctor_report* r) { delete r; }

}  // extern "C"
