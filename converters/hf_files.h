// SPDX-License-Identifier: MIT
// Reading the small files of a Hugging Face model directory.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "tokenizer/tokenizer.h"

namespace brisk::convert {

// The whole file, or nullopt if it does not exist. Files above max_bytes
// are refused (BRISK_ERR_BAD_FORMAT): these are small JSON files.
std::optional<std::string> read_small_file(const std::filesystem::path& p, uint64_t max_bytes = uint64_t(64) << 20);

// The vocabulary a GGUF gets for this directory: tokenizer.json through
// lib/tokenizer's reader, then what llama.cpp's SpecialVocab adds from
// tokenizer_config.json (add_bos/add_eos, bos/eos/unk/pad tokens by text,
// chat_template, else chat_template.jinja / chat_template.json) and the
// bos/eos ids of config.json and generation_config.json for ids still unset.
// Padded with "[PAD<n>]" (UNUSED) tokens up to n_vocab rows.
VocabData load_hf_directory_vocab(const std::filesystem::path& dir, int64_t n_vocab, std::optional<int64_t> config_bos,
                                  std::optional<int64_t> config_eos);

// Applies tokenizer_config.json / chat-template files / generation_config.json
// (texts, each may be nullopt) to v; the part of load_hf_directory_vocab
// that does not touch the disk, separate for tests and fuzzing.
void apply_hf_special_tokens(VocabData& v, const std::optional<std::string>& tokenizer_config,
                             const std::optional<std::string>& generation_config, std::optional<int64_t> config_bos,
                             std::optional<int64_t> config_eos);

}  // namespace brisk::convert
