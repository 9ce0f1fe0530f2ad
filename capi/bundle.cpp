// SPDX-License-Identifier: MIT
// brisk_verify, brisk_add_manifest, brisk_pack, brisk_unpack.
#include <string>

#include "bundle/pack.h"
#include "bundle/verify.h"
#include "guard.h"
#include "handles.h"
#include "job.h"

using brisk::capi::guard;
using brisk::capi::require;

namespace {

brisk::bundle::Job job_of(const brisk_verify_options& o, const char* stage) {
  return brisk::capi::make_job(stage, o.n_threads, o.progress_fn, o.progress_user_data, o.abort_fn, o.abort_user_data);
}
brisk::bundle::Job job_of(const brisk_pack_options& o, const char* stage) {
  return brisk::capi::make_job(stage, o.n_threads, o.progress_fn, o.progress_user_data, o.abort_fn, o.abort_user_data,
                               o.log_fn, o.log_user_data);
}

}  // namespace

extern "C" {

static void fill_verify_options(brisk_verify_options* o) {
  if (!o) return;
  *o = brisk_verify_options{};
  o->struct_size = sizeof(*o);
}

brisk_status brisk_verify(const char* path, const brisk_verify_options* options, uint64_t* bytes_checked) {
  return guard([&] {
    require(path, "path");
    if (bytes_checked) *bytes_checked = 0;
    const brisk_verify_options o = brisk::capi::merge_options(options, [](brisk_verify_options* p) { brisk_verify_options_init(p); });
    const brisk::bundle::Job job = job_of(o, "verify");
    brisk::bundle::VerifyResult r;
    if (brisk::bundle::is_bundle(path)) {
      r = brisk::bundle::verify_bundle(path, job);
    } else {
      brisk::gguf::File f(path, brisk::capi::map_options_of(o));
      r = brisk::bundle::verify_gguf(f, job);
    }
    if (bytes_checked) *bytes_checked = r.bytes_hashed;
    if (!r.has_manifest)
      brisk::fail(BRISK_ERR_NOT_FOUND, std::string("'") + path + "' has no brisk checksum manifest "
                                                                 "(add one with brisk_add_manifest)");
    for (const brisk::bundle::Problem& p : r.problems)
      if (o.mismatch_fn) o.mismatch_fn(o.mismatch_user_data, p.where.c_str(), p.detail.c_str());
    if (!r.problems.empty())
      brisk::fail(BRISK_ERR_CHECKSUM, std::string("'") + path + "': " + std::to_string(r.problems.size()) +
                                          " checksum mismatch(es); first: " + r.problems[0].where + ": " +
                                          r.problems[0].detail);
  });
}

brisk_status brisk_add_manifest(const char* path, const char* out_path, const brisk_verify_options* options) {
  return guard([&] {
    require(path, "path");
    const brisk_verify_options o = brisk::capi::merge_options(options, [](brisk_verify_options* p) { brisk_verify_options_init(p); });
    brisk::bundle::add_manifest(path, out_path ? out_path : path, job_of(o, "verify"), brisk::capi::map_options_of(o));
  });
}

static void fill_pack_options(brisk_pack_options* o) {
  if (!o) return;
  *o = brisk_pack_options{};
  o->struct_size = sizeof(*o);
  o->level = 3;
  o->long_distance = -1;
}

brisk_status brisk_pack(const char* gguf_path, const char* bundle_path, const brisk_pack_options* options) {
  return guard([&] {
    require(gguf_path, "gguf_path");
    require(bundle_path, "bundle_path");
    const brisk_pack_options o = brisk::capi::merge_options(options, [](brisk_pack_options* p) { brisk_pack_options_init(p); });
    brisk::bundle::PackOptions po;
    po.level = o.level;
    po.long_distance = o.long_distance;
    po.input = brisk::capi::map_options_of(o);
    brisk::bundle::pack(gguf_path, bundle_path, po, job_of(o, "pack"));
  });
}

brisk_status brisk_unpack(const char* bundle_path, const char* gguf_path, const brisk_pack_options* options) {
  return guard([&] {
    require(bundle_path, "bundle_path");
    require(gguf_path, "gguf_path");
    const brisk_pack_options o = brisk::capi::merge_options(options, [](brisk_pack_options* p) { brisk_pack_options_init(p); });
    brisk::bundle::unpack(bundle_path, gguf_path, job_of(o, "unpack"));
  });
}

}  // extern "C"

extern "C" {
void brisk_verify_options_init_sized(brisk_verify_options* o, size_t size) {
  brisk::capi::init_sized(o, size, fill_verify_options);
}
void brisk_pack_options_init_sized(brisk_pack_options* o, size_t size) {
  brisk::capi::init_sized(o, size, fill_pack_options);
}
}  // extern "C"
