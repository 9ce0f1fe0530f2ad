// SPDX-License-Identifier: MIT
// Whole-model quantization: GGUF in, GGUF out (atomically), one tensor in
// memory at a time, rows of a tensor split across threads. The bytes of each
// row depend only on the row (and its importance), never on the thread
// count, so the output is the same on any machine.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "gguf/writer.h"
#include "quantize/recipe.h"

namespace brisk {
class ThreadPool;
}

namespace brisk::quantize {

// Per-column importance of each weight matrix, by tensor name (for example
// the mean squared activation that multiplies each column). A matrix with no
// entry is quantized without importance.
using ImportanceMap = std::map<std::string, std::vector<float>>;

struct QuantizeOptions {
  std::string preset = "q8_0";
  PlanOptions plan;
  const ImportanceMap* importance = nullptr;
  int n_threads = 0;  // 0: all cores
  MapOptions input;   // how the input model is brought in (mlock, read into memory)
  // Extra metadata added after everything copied from the input (recipe,
  // calibration provenance). Called once with the writer.
  std::function<void(gguf::Writer&)> extra_metadata;
  // Before each tensor is written: (index, count, plan entry). Return false to cancel.
  std::function<bool(size_t, size_t, const TensorPlan&)> on_tensor;
  // Free-form messages (fallbacks, requantizing warnings).
  std::function<void(const std::string&)> warn;
};

struct QuantizeResult {
  std::vector<TensorPlan> tensors;
  uint64_t file_bytes = 0;
  uint64_t tensor_bytes = 0;   // sum of tensor data sizes
  uint64_t n_elements = 0;     // all tensors
  uint64_t src_tensor_bytes = 0;
  double bpw() const { return n_elements ? 8.0 * static_cast<double>(tensor_bytes) / n_elements : 0; }
};

// Throws brisk::Error; BRISK_ERR_CANCELLED if on_tensor returned false (the
// target file is then left untouched).
QuantizeResult quantize_model(const std::string& in_path, const std::string& out_path, const QuantizeOptions& options);

// The plan without writing anything (what --dry-run and the size budget use).
std::vector<TensorPlan> plan_for(const gguf::File& in, const QuantizeOptions& options);

// THE place where a written model's metadata is assembled: every key of the
// input except the ones quantization redefines, then general.quantization_version
// and general.file_type (appended, as llama.cpp does), then `extra`. Anything
// that must go into every GGUF brisk writes (a checksum manifest, ...) hooks in here.
void assemble_metadata(gguf::Writer& w, const gguf::File& in, const Preset& preset,
                       const std::function<void(gguf::Writer&)>& extra);

// Bytes of the file the plan would produce, exactly (header + aligned data),
// given the metadata `assemble_metadata` would write.
uint64_t predict_file_size(const gguf::File& in, const Preset& preset, const std::vector<TensorPlan>& plan,
                           const std::function<void(gguf::Writer&)>& extra);

// Quantizes a float matrix (n_rows x cols) into dst with `importance` (cols
// floats or nullptr), rows spread over the pool (nullptr: this thread only).
void quantize_rows(TensorType type, const float* src, uint8_t* dst, int64_t n_rows, int64_t cols,
                   const float* importance, ThreadPool* pool);

}  // namespace brisk::quantize
