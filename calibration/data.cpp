// SPDX-License-Identifier: MIT
#include "calibration/data.h"

#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/json_depth.h"

namespace brisk::calib {

namespace fs = std::filesystem;

std::string xxh3_hex(const void* data, size_t n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "xxh3:%016llx", static_cast<unsigned long long>(XXH3_64bits(data, n)));
  return buf;
}

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(BRISK_ERR_NOT_FOUND, "cannot read '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool is_jsonl(const fs::path& p) {
  const std::string e = p.extension().string();
  return e == ".jsonl" || e == ".ndjson";
}

// Cut after the first newline at or past `at`, so no line is split between parts.
size_t line_cut(const std::string& s, size_t at) {
  if (at >= s.size()) return s.size();
  const size_t nl = s.find('\n', at);
  return nl == std::string::npos ? s.size() : nl + 1;
}

void fill_text(DataSource& d, const std::string& bytes, double holdout) {
  const size_t cut = holdout > 0 ? line_cut(bytes, static_cast<size_t>((1.0 - holdout) * bytes.size())) : bytes.size();
  d.calib_text = bytes.substr(0, cut);
  d.heldout_text = bytes.substr(cut);
  d.calib_bytes = d.calib_text.size();
  d.heldout_bytes = d.heldout_text.size();
}

void fill_jsonl(DataSource& d, const std::string& bytes, const DataOptions& o) {
  std::vector<std::string> records;
  std::istringstream in(bytes);
  std::string line;
  for (int lineno = 1; std::getline(in, line); ++lineno) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j;
    check_json_depth(line, d.path + ":" + std::to_string(lineno));
    try {
      j = nlohmann::json::parse(line);
    } catch (const std::exception& e) {
      fail(BRISK_ERR_BAD_FORMAT, d.path + ":" + std::to_string(lineno) + ": not JSON: " + e.what());
    }
    if (!j.is_object() || !j.contains(o.jsonl_field) || !j[o.jsonl_field].is_string())
      fail(BRISK_ERR_BAD_FORMAT, d.path + ":" + std::to_string(lineno) + ": no string field '" + o.jsonl_field + "'");
    records.push_back(j[o.jsonl_field].get<std::string>());
  }
  const size_t n_held = o.holdout > 0 ? static_cast<size_t>(o.holdout * records.size() + 0.5) : 0;
  const size_t n_cal = records.size() - std::min(n_held, records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    std::string& part = i < n_cal ? d.calib_text : d.heldout_text;
    if (!part.empty()) part += "\n\n";
    part += records[i];
  }
  d.calib_bytes = n_cal;
  d.heldout_bytes = records.size() - n_cal;
}

}  // namespace

std::string xxh3_file(const std::string& path) {
  const std::string b = read_all(path);
  return xxh3_hex(b.data(), b.size());
}

// Every byte is held in memory (and a directory is walked recursively):
// beyond these, the input is a mistake, not calibration text.
constexpr uint64_t kMaxDataBytes = uint64_t(1) << 30;
constexpr size_t kMaxDataFiles = 100000;

std::vector<DataSource> load_data(const std::vector<std::string>& paths, const DataOptions& o) {
  if (!(o.holdout >= 0 && o.holdout < 1)) fail(BRISK_ERR_INVALID_ARGUMENT, "holdout must be in [0, 1)");
  std::vector<fs::path> files;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> found;
      for (const auto& e : fs::recursive_directory_iterator(p)) {
        if (e.is_regular_file() && e.path().filename().string()[0] != '.') found.push_back(e.path());
        if (found.size() > kMaxDataFiles)
          fail(BRISK_ERR_INVALID_ARGUMENT, "directory '" + p + "' holds more than " + std::to_string(kMaxDataFiles) + " files");
      }
      std::sort(found.begin(), found.end());
      if (found.empty()) fail(BRISK_ERR_NOT_FOUND, "directory '" + p + "' holds no files");
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(p, ec)) {
      files.emplace_back(p);
    } else {
      fail(BRISK_ERR_NOT_FOUND, "no such file or directory: '" + p + "'");
    }
  }
  uint64_t total = 0;
  for (const fs::path& f : files) {
    std::error_code ec;
    total += fs::file_size(f, ec);
    if (total > kMaxDataBytes)
      fail(BRISK_ERR_INVALID_ARGUMENT, "the calibration data exceeds " + std::to_string(kMaxDataBytes >> 20) +
                                           " MiB (at '" + f.string() + "'): pass fewer or smaller files");
  }
  std::vector<DataSource> out;
  for (const fs::path& f : files) {
    DataSource d;
    d.path = f.string();
    const std::string bytes = read_all(d.path);
    d.bytes = bytes.size();
    d.hash = xxh3_hex(bytes.data(), bytes.size());
    d.jsonl = is_jsonl(f);
    if (d.jsonl) fill_jsonl(d, bytes, o);
    else fill_text(d, bytes, o.holdout);
    out.push_back(std::move(d));
  }
  return out;
}

std::string first_chars(const std::string& text, int64_t n) {
  if (n < 0) return text;
  size_t i = 0;
  for (int64_t c = 0; c < n && i < text.size(); ++c) {
    ++i;
    while (i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) ++i;
  }
  return text.substr(0, i);
}

Chunks make_chunks(const Model& model, const std::vector<std::string>& texts, int n_ctx, uint64_t max_tokens) {
  Chunks c;
  c.n_ctx = n_ctx;
  const Tokenizer& tok = model.tokenizer();
  std::vector<std::vector<int32_t>> all;
  for (const std::string& t : texts) {
    if (t.empty()) continue;
    const std::vector<int32_t> ids = tok.encode(t, true, false);
    for (size_t s = 0; s + n_ctx <= ids.size(); s += n_ctx) {
      std::vector<int32_t> ch(ids.begin() + s, ids.begin() + s + n_ctx);
      if (tok.bos() >= 0) ch[0] = tok.bos();
      all.push_back(std::move(ch));
    }
  }
  c.available_tokens = static_cast<uint64_t>(all.size()) * n_ctx;
  const size_t want = max_tokens > 0 ? static_cast<size_t>(max_tokens / n_ctx) : all.size();
  if (want >= all.size()) {
    c.chunks = std::move(all);
  } else {
    // Evenly spaced picks: every part of the text is represented, and the
    // same inputs always give the same chunks.
    for (size_t i = 0; i < want; ++i) c.chunks.push_back(std::move(all[(i * all.size() + all.size() / 2) / want]));
  }
  return c;
}

}  // namespace brisk::calib
