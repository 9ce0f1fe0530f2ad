// SPDX-License-Identifier: MIT
#include "quantize/quantize.h"

#include <algorithm>
#include <cstring>

#include "bundle/manifest.h"
#include "core/error.h"
#include "quant/quant.h"
#include "threads/thread_pool.h"

namespace brisk::quantize {

namespace {

// Keys that quantization redefines; everything else is copied verbatim.
bool redefined_key(const std::string& k) {
  return k == "general.quantization_version" || k == "general.file_type" || k == "general.alignment" ||
         k.rfind("brisk.recipe.", 0) == 0 || k.rfind("brisk.calibration.", 0) == 0 ||
         k.rfind("quantize.imatrix.", 0) == 0 ||
         k.rfind(bundle::kManifestPrefix, 0) == 0;  // conv: the output gets its own manifest
}

// ---- conv: every GGUF brisk writes carries a checksum manifest ----
const std::string& manifest_tool() {
  static const std::string tool = bundle::tool_string("quantize");
  return tool;
}

// The tensors, then the manifest keys (their size is fixed, so the predicted
// file size stays exact).
void add_tensors(gguf::Writer& w, const std::vector<TensorPlan>& plan) {
  for (const TensorPlan& t : plan) {
    std::vector<int64_t> ne(t.ne, t.ne + std::max<uint32_t>(1, t.n_dims));
    w.add_tensor(t.name, t.type, ne);
  }
  bundle::add_manifest_keys(w, manifest_tool());
}

// Source rows as floats: a view for F32, a converted copy otherwise.
const float* source_floats(const gguf::TensorInfo& t, std::vector<float>& buf) {
  if (t.type == TensorType::F32) return reinterpret_cast<const float*>(t.data);
  const int64_t cols = t.ne[0], rows = t.n_rows();
  buf.resize(static_cast<size_t>(cols * rows));
  const size_t rb = row_bytes(t.type, cols);
  for (int64_t r = 0; r < rows; ++r)
    quant::dequantize_row(t.type, t.data + static_cast<size_t>(r) * rb, buf.data() + r * cols, cols);
  return buf.data();
}

}  // namespace

void assemble_metadata(gguf::Writer& w, const gguf::File& in, const Preset& preset,
                       const std::function<void(gguf::Writer&)>& extra) {
  for (const auto& [key, value] : in.metadata())
    if (!redefined_key(key)) w.add_value(key, value);
  if (in.alignment() != 32) w.set_alignment(static_cast<uint32_t>(in.alignment()));
  w.add_u32("general.quantization_version", 2);
  w.add_u32("general.file_type", preset.file_type);
  if (extra) extra(w);
}

uint64_t predict_file_size(const gguf::File& in, const Preset& preset, const std::vector<TensorPlan>& plan,
                           const std::function<void(gguf::Writer&)>& extra) {
  gguf::Writer w;
  assemble_metadata(w, in, preset, extra);
  add_tensors(w, plan);
  const uint64_t align = in.alignment();
  uint64_t pos = (w.header_bytes().size() + align - 1) / align * align;
  for (size_t i = 0; i < w.n_tensors(); ++i) {
    pos = (pos + align - 1) / align * align;
    pos += w.tensor_bytes(i);
  }
  return pos;
}

std::vector<TensorPlan> plan_for(const gguf::File& in, const QuantizeOptions& o) {
  return plan_model(in, find_preset(o.preset), o.plan);
}

void quantize_rows(TensorType type, const float* src, uint8_t* dst, int64_t n_rows, int64_t cols,
                   const float* importance, ThreadPool* pool) {
  const size_t rb = row_bytes(type, cols);
  if (type_traits(type).block_size > 1)
    if (const int64_t bad = quant::first_non_finite(src, n_rows * cols); bad >= 0)
      fail(BRISK_ERR_BAD_FORMAT, "row " + std::to_string(bad / cols) + " holds a NaN or infinite value: it cannot be "
                                 "quantized to " + type_name(type));
  // Tasks of whole rows: each row's bytes depend on that row alone, so the
  // split (and the thread count) cannot change the result.
  const int64_t rows_per_task = std::max<int64_t>(1, 65536 / std::max<int64_t>(cols, 1));
  const int64_t n_tasks = (n_rows + rows_per_task - 1) / rows_per_task;
  auto task = [&](int64_t t, int) {
    const int64_t r1 = std::min(n_rows, (t + 1) * rows_per_task);
    for (int64_t r = t * rows_per_task; r < r1; ++r)
      quant::quantize_row(type, src + r * cols, dst + static_cast<size_t>(r) * rb, cols, importance);
  };
  if (pool && n_tasks > 1) {
    pool->parallel_for(n_tasks, task);
  } else {
    for (int64_t t = 0; t < n_tasks; ++t) task(t, 0);
  }
}

QuantizeResult quantize_model(const std::string& in_path, const std::string& out_path, const QuantizeOptions& o) {
  if (in_path == out_path) fail(BRISK_ERR_INVALID_ARGUMENT, "input and output are the same file");
  gguf::File in(in_path, o.input);
  const Preset& preset = find_preset(o.preset);
  QuantizeResult res;
  res.tensors = plan_model(in, preset, o.plan);
  for (const TensorPlan& t : res.tensors) {
    if (!t.is_matrix) continue;
    if (t.type != t.wanted && o.warn) o.warn(t.name + ": " + t.why + " -> " + type_name(t.type));
    if (!quant::can_quantize(t.type))
      fail(BRISK_ERR_UNSUPPORTED, t.name + ": brisk cannot write type " + type_name(t.type));
    if (!type_traits(t.src_type).supported)
      fail(BRISK_ERR_UNSUPPORTED, t.name + ": cannot read source type " + type_name(t.src_type));
    if (o.importance && o.importance->count(t.name) && o.importance->at(t.name).size() != static_cast<size_t>(t.ne[0]))
      fail(BRISK_ERR_INVALID_ARGUMENT, t.name + ": the calibration has " +
                                           std::to_string(o.importance->at(t.name).size()) + " columns, the tensor " +
                                           std::to_string(t.ne[0]) + " (was it made for another model?)");
  }
  bool requant_warned = false;
  for (const TensorPlan& t : res.tensors) {
    if (t.is_matrix && t.src_type != TensorType::F32 && t.src_type != TensorType::F16 &&
        t.src_type != TensorType::BF16 && t.src_type != t.type && !requant_warned && o.warn) {
      o.warn("the input is already quantized: requantizing loses quality (quantize from F32/F16 if you can)");
      requant_warned = true;
    }
  }

  gguf::Writer w;
  assemble_metadata(w, in, preset, o.extra_metadata);
  add_tensors(w, res.tensors);

  ThreadPoolOptions po;
  po.n_threads = o.n_threads;
  po.pin = false;  // a short job beside other work: do not take cores over
  ThreadPool pool(po);
  std::vector<float> fbuf;
  std::vector<uint8_t> out;
  bundle::write_with_manifest(w, out_path, [&](size_t i, const gguf::Writer::Sink& sink) {
    const TensorPlan& tp = res.tensors[i];
    if (o.on_tensor && !o.on_tensor(i, res.tensors.size(), tp)) fail(BRISK_ERR_CANCELLED, "quantization cancelled");
    const gguf::TensorInfo& src = *in.find_tensor(tp.name);
    if (tp.type == src.type) {  // nothing to convert: the bytes as they are
      sink(src.data, static_cast<size_t>(src.n_bytes));
      return;
    }
    const float* x = source_floats(src, fbuf);
    const int64_t cols = src.ne[0], rows = src.n_rows();
    out.resize(row_bytes(tp.type, cols) * static_cast<size_t>(rows));
    const float* imp = nullptr;
    if (o.importance && tp.is_matrix) {
      auto it = o.importance->find(tp.name);
      if (it != o.importance->end()) imp = it->second.data();
    }
    if (type_traits(tp.type).block_size > 1)
      if (const int64_t bad = quant::first_non_finite(x, rows * cols); bad >= 0)
        fail(BRISK_ERR_BAD_FORMAT, "tensor '" + tp.name + "' row " + std::to_string(bad / cols) +
                                       " holds a NaN or infinite value: it cannot be quantized");
    quantize_rows(tp.type, x, out.data(), rows, cols, imp, &pool);
    sink(out.data(), out.size());
  }, manifest_tool(), [&] { return bundle::hash_bytes(in.file_data(), in.file_size()); });
  for (const TensorPlan& t : res.tensors) {
    res.tensor_bytes += t.bytes();
    res.n_elements += static_cast<uint64_t>(t.n_elements());
    res.src_tensor_bytes += in.find_tensor(t.name)->n_bytes;
  }
  res.file_bytes = predict_file_size(in, preset, res.tensors, o.extra_metadata);
  return res;
}

}  // namespace brisk::quantize
