// SPDX-License-Identifier: MIT
#include "converters/model_writer.h"

#include <algorithm>
#include <map>

#include "bundle/manifest.h"
#include "bundle/parallel.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "quant/quant.h"

namespace brisk::convert {

bool can_convert_to(TensorType t) {
  switch (t) {
    case TensorType::F32: case TensorType::F16: case TensorType::BF16: case TensorType::Q8_0:
    case TensorType::Q4_0: case TensorType::Q4_1: case TensorType::Q4_K: case TensorType::Q5_K:
    case TensorType::Q6_K: return true;
    default: return false;
  }
}

TensorType storage_type(TensorType wanted, int64_t cols, bool matrix) {
  if (!matrix) return TensorType::F32;
  if (cols % type_traits(wanted).block_size == 0) return wanted;
  if (type_traits(wanted).block_size == 256 && cols % 32 == 0) return TensorType::Q8_0;
  return TensorType::F16;
}

uint32_t gguf_file_type(TensorType t) {
  switch (t) {
    case TensorType::F32: return 0;
    case TensorType::F16: return 1;
    case TensorType::Q4_0: return 2;
    case TensorType::Q4_1: return 3;
    case TensorType::Q8_0: return 7;
    case TensorType::Q4_K: return 14;  // LLAMA_FTYPE_MOSTLY_Q4_K_S
    case TensorType::Q5_K: return 16;  // LLAMA_FTYPE_MOSTLY_Q5_K_S
    case TensorType::Q6_K: return 18;
    case TensorType::BF16: return 32;
    default: fail(BRISK_ERR_INVALID_ARGUMENT, std::string("cannot convert to ") + type_name(t));
  }
}

int64_t permuted_row(int64_t r, int64_t rows, int64_t heads) {
  // Within a head of hd rows, HF keeps the first halves of all rotation
  // pairs, then the second halves; GGUF interleaves them: row 2i+j of the
  // head comes from HF row j*hd/2 + i.
  const int64_t hd = rows / heads, h = r / hd, w = r % hd;
  return h * hd + (w % 2) * (hd / 2) + w / 2;
}

void hash_and_release(bundle::Hasher& h, const uint8_t* p, size_t n, const MapOptions& how) {
  constexpr size_t kChunk = size_t(64) << 20;
  for (size_t off = 0; off < n; off += kChunk) {
    const size_t k = std::min(kChunk, n - off);
    h.update(p + off, k);
    release_pages(p + off, k, how);
  }
}

namespace {

int64_t n_rows(const PlannedTensor& t) {
  int64_t rows = 1;
  for (size_t d = 1; d < t.ne.size(); ++d) rows *= t.ne[d];
  return rows;
}

void check_plan(const PlannedTensor& t) {
  if (t.ne.empty() || t.ne.size() > 4 || !t.src) fail(BRISK_ERR_INTERNAL, "bad conversion plan for '" + t.name + "'");
  const int64_t rows = n_rows(t);
  if (t.permute_heads > 0 && (rows % t.permute_heads != 0 || (rows / t.permute_heads) % 2 != 0))
    fail(BRISK_ERR_BAD_FORMAT, "tensor '" + t.name + "': " + std::to_string(rows) + " rows do not split into " +
                                   std::to_string(t.permute_heads) + " heads of even size");
}

}  // namespace

void write_model(gguf::Writer& w, const std::vector<PlannedTensor>& plan, TensorType wanted, const std::string& path,
                 const std::string& tool, const std::function<bundle::Hash128()>& source_hash, const bundle::Job& job,
                 const MapOptions& source) {
  w.add_u32("general.file_type", gguf_file_type(wanted));
  if (type_traits(wanted).block_size > 1) w.add_u32("general.quantization_version", 2);
  // One warning per kind of fallback, not one per tensor.
  std::map<std::string, std::pair<int, std::string>> fallbacks;
  uint64_t total = 0;
  for (const PlannedTensor& t : plan) {
    check_plan(t);
    w.add_tensor(t.name, t.type, t.ne);
    total += row_bytes(t.src_type, t.ne[0]) * static_cast<uint64_t>(n_rows(t));
    if (t.ne.size() > 1 && t.type != wanted) {
      // F16 after a K-quant means not even the 32-block fallback fitted.
      const std::string blocks = t.type == TensorType::F16 && type_traits(wanted).block_size == 256
                                     ? "256 nor of 32"
                                     : std::to_string(type_traits(wanted).block_size);
      auto& f = fallbacks[std::string(type_name(t.type)) + " (row length " + std::to_string(t.ne[0]) +
                          " is not a multiple of " + blocks + ")"];
      if (f.first++ == 0) f.second = t.name;
    }
  }
  for (const auto& [why, f] : fallbacks)
    job.warning(std::to_string(f.first) + " tensor(s) stored as " + why + ", e.g. " + f.second);

  std::vector<uint8_t> out;
  uint64_t done = 0;
  const int threads = job.threads();
  auto produce = [&](size_t i, const gguf::Writer::Sink& sink) {
    const PlannedTensor& t = plan[i];
    const int64_t cols = t.ne[0];
    const int64_t rows = n_rows(t);
    const size_t in_rb = row_bytes(t.src_type, cols), out_rb = row_bytes(t.type, cols);
    out.resize(w.tensor_bytes(i));
    // Rows in blocks of about 1 MiB of source, so small tensors do not pay
    // for many tasks and big ones still spread over every thread.
    const int64_t per_task = std::max<int64_t>(1, static_cast<int64_t>((size_t(1) << 20) / std::max<size_t>(in_rb, 1)));
    const size_t n_tasks = static_cast<size_t>((rows + per_task - 1) / per_task);
    const double f0 = static_cast<double>(done) / static_cast<double>(std::max<uint64_t>(total, 1));
    const double f1 = static_cast<double>(done + in_rb * rows) / static_cast<double>(std::max<uint64_t>(total, 1));
    bundle::parallel_for(n_tasks, threads, job, static_cast<uint64_t>(rows), f0, f1, "converting " + t.name,
                         [&](size_t task, bundle::TaskState& st) {
                           std::vector<float> row(t.src_type == t.type ? 0 : static_cast<size_t>(cols));
                           const int64_t r0 = static_cast<int64_t>(task) * per_task, r1 = std::min(rows, r0 + per_task);
                           for (int64_t r = r0; r < r1; ++r) {
                             const int64_t sr = t.permute_heads > 0 ? permuted_row(r, rows, t.permute_heads) : r;
                             const uint8_t* in = t.src + static_cast<size_t>(sr) * in_rb;
                             uint8_t* o = out.data() + static_cast<size_t>(r) * out_rb;
                             if (t.src_type == t.type) {
                               std::copy(in, in + in_rb, o);
                             } else {
                               quant::dequantize_row(t.src_type, in, row.data(), cols);
                               if (type_traits(t.type).block_size > 1 && quant::first_non_finite(row.data(), cols) >= 0)
                                 fail(BRISK_ERR_BAD_FORMAT, "tensor '" + t.name + "' row " + std::to_string(sr) +
                                                                " holds a NaN or infinite value: it cannot be stored as " +
                                                                type_name(t.type));
                               quant::quantize_row(t.type, row.data(), o, cols);
                             }
                           }
                           st.done += static_cast<uint64_t>(r1 - r0);
                         });
    done += in_rb * static_cast<uint64_t>(rows);
    release_pages(t.src, in_rb * static_cast<size_t>(rows), source);
    sink(out.data(), out.size());
  };
  bundle::write_with_manifest(w, path, produce, tool, source_hash);
  job.report(1.0, "done");
}

}  // namespace brisk::convert
