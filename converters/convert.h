// SPDX-License-Identifier: MIT
// Converters from other checkpoint formats to GGUF. Both stream: sources
// are memory-mapped and converted one tensor at a time, and the output is
// written atomically with a checksum manifest (lib/bundle/manifest.h).
#pragma once
#include <string>

#include "bundle/job.h"
#include "core/mapped_file.h"
#include "core/tensor_type.h"

namespace brisk::convert {

struct ConvertOptions {
  // Matrix storage type; F32/F16/BF16 or a quantized type. auto_type: the
  // source's float type (llama2.c checkpoints are F32).
  bool auto_type = true;
  TensorType type = TensorType::F32;
  // general.name; "" = the directory's name (HF) or "llama" (llama2.c, as llama.cpp).
  std::string name;
  MapOptions input;  // how the checkpoint's files are brought in (mlock, read into memory)
};

// A Hugging Face model directory: config.json, model.safetensors (or shards
// listed in model.safetensors.index.json), tokenizer.json and
// tokenizer_config.json / generation_config.json when present.
void convert_hf(const std::string& dir, const std::string& out_path, const ConvertOptions& options,
                const bundle::Job& job);

// A llama2.c checkpoint (legacy version-0 format) and its tokenizer .bin,
// with the metadata and tensor layout of llama.cpp's convert-llama2c-to-ggml.
void convert_llama2c(const std::string& model_path, const std::string& tokenizer_path, const std::string& out_path,
                     const ConvertOptions& options, const bundle::Job& job);

}  // namespace brisk::convert
