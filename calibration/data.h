// SPDX-License-Identifier: MIT
// The user's text for calibration and evaluation: plain text files, JSONL
// (one JSON object per line, text in a chosen field), or directories of
// either (every regular file, sorted by path). Each source is split into a
// calibration part and a held-out tail (the last `holdout` fraction, cut at a
// line or record boundary) so that quality can be measured on text the
// statistics never saw. Files are hashed (XXH3-64) so a report can say
// exactly which bytes were used.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/model.h"

namespace brisk::calib {

struct DataSource {
  std::string path;
  std::string hash;        // "xxh3:0123456789abcdef" of the whole file
  uint64_t bytes = 0;
  bool jsonl = false;
  uint64_t calib_bytes = 0;    // bytes (text) or records (JSONL) in the calibration part
  uint64_t heldout_bytes = 0;  // ... and in the held-out part
  std::string calib_text;      // the text of each part (JSONL: records' text joined by "\n\n")
  std::string heldout_text;
};

struct DataOptions {
  std::string jsonl_field = "text";
  double holdout = 0.1;  // 0: everything is calibration text
};

// Reads every path (files or directories). Throws BRISK_ERR_NOT_FOUND /
// BRISK_ERR_BAD_FORMAT with the file and line for unreadable input.
std::vector<DataSource> load_data(const std::vector<std::string>& paths, const DataOptions& options);

std::string xxh3_hex(const void* data, size_t n);
std::string xxh3_file(const std::string& path);

// The first n UTF-8 characters of text (all of it if shorter; n < 0: all).
std::string first_chars(const std::string& text, int64_t n);

// Tokens of `text` cut into chunks of n_ctx for calibration, as llama-imatrix
// does: each source's text tokenized as one string with BOS, consecutive
// chunks of n_ctx tokens (a short tail is dropped), the first token of each
// chunk set to BOS. Then, if they hold more than max_tokens, an evenly
// spaced subset (deterministic) of floor(max_tokens / n_ctx) chunks.
struct Chunks {
  int n_ctx = 0;
  std::vector<std::vector<int32_t>> chunks;
  uint64_t available_tokens = 0;  // tokens in all chunks before sampling
};
Chunks make_chunks(const Model& model, const std::vector<std::string>& texts, int n_ctx, uint64_t max_tokens);

}  // namespace brisk::calib
