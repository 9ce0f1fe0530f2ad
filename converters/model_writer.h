// SPDX-License-Identifier: MIT
// The part of conversion shared by every source format: choosing each
// tensor's storage type, converting rows (F32/F16/BF16 source -> any type
// brisk writes, via quant::quantize_row), and writing the GGUF with its
// checksum manifest, one tensor in memory at a time.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bundle/hash.h"
#include "bundle/job.h"
#include "core/tensor_type.h"
#include "gguf/writer.h"

namespace brisk::convert {

// Types `brisk convert --type` accepts.
bool can_convert_to(TensorType t);

// The type a tensor is stored as when `wanted` is asked for. 1-D tensors
// (norms, biases) stay F32. A matrix whose row length does not fit the
// type's block falls back like llama.cpp: 32-blocks (q8_0, q4_0, q4_1) to
// F16; K-quants (256-blocks) to q8_0 -- llama.cpp would pick q5_0/q5_1,
// which brisk does not run, so the next better type brisk has -- or to F16
// when not even 32 fits.
TensorType storage_type(TensorType wanted, int64_t row_length, bool matrix);

// general.file_type (llama_ftype) for a model converted to `t`; K-quants
// map to the "_S" variants since every matrix gets the same type.
uint32_t gguf_file_type(TensorType t);

struct PlannedTensor {
  std::string name;          // GGUF name, e.g. "blk.0.attn_q.weight"
  std::vector<int64_t> ne;   // GGUF order: ne[0] is the row length
  TensorType src_type = TensorType::F32;  // F32, F16 or BF16
  const uint8_t* src = nullptr;           // ne[1]*... rows of ne[0] elements
  // > 0: the rows form this many attention heads stored in Hugging Face's
  // rotate-half order; they are reordered to GGUF's interleaved pairs (the
  // `permute` of llama.cpp's convert_hf_to_gguf.py).
  int64_t permute_heads = 0;
  TensorType type = TensorType::F32;  // storage type (see storage_type)
};

// Source row that becomes output row r when permuting `rows` rows in `heads` heads.
int64_t permuted_row(int64_t r, int64_t rows, int64_t heads);

// Feeds [p, p + n) of a file brought in with `how` to h, releasing the pages
// behind it (release_pages), so a converter's resident memory stays about
// one tensor.
void hash_and_release(bundle::Hasher& h, const uint8_t* p, size_t n, const MapOptions& how);

// Adds general.file_type (and quantization_version for quantized types)
// and the tensors to `w`, then writes `path` atomically with a manifest.
// Fallbacks taken are reported through job.warning, one line per kind.
// Sources (brought in with `source`) are released as each tensor is written.
void write_model(gguf::Writer& w, const std::vector<PlannedTensor>& plan, TensorType wanted, const std::string& path,
                 const std::string& tool, const std::function<bundle::Hash128()>& source_hash, const bundle::Job& job,
                 const MapOptions& source);

}  // namespace brisk::convert
