// SPDX-License-Identifier: MIT
// Files of `brisk batch`: the JSONL input split into records, the output
// journal that survives kill -9 and power cuts, the sidecar that ties an
// output to its model, input and options, and the merge of shard outputs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace brisk::tools::batch {

// One input record: the raw line and where it came from. Records are the
// non-blank lines of the input, numbered from 0 (`index`); a shard K/N holds
// the records whose index % N == K.
struct InputRecord {
  uint64_t index = 0;
  uint64_t line = 0;  // 1-based line number, for messages
  std::string text;
};

struct Input {
  std::vector<InputRecord> records;  // this shard's records only
  uint64_t total = 0;                // records in the whole input
  uint64_t bytes = 0;
  std::string hash;                  // FNV-1a 64 of the bytes, hex
};

// Reads the input; false (with *error set) if it cannot be read.
bool read_input(const std::string& path, uint32_t shard_k, uint32_t shard_n, Input* out, std::string* error);

// The sidecar "<output>.batch.json": what the output was made from.
std::string sidecar_path(const std::string& output);
// Writes it atomically (temporary file, fsync, rename, fsync of the directory).
bool write_sidecar(const std::string& output, const nlohmann::ordered_json& meta, std::string* error);
// Loads it; false if absent (*error empty) or unreadable (*error set).
bool read_sidecar(const std::string& output, nlohmann::json* meta, std::string* error);
// The first field in which two sidecars differ ("model", "options.temperature"), "" if none.
std::string sidecar_difference(const nlohmann::json& was, const nlohmann::json& now);

// The output file, appended record by record in input order. Opening it
// checks what is there: a torn last line (a write cut short) is trimmed,
// and every complete line must be the next expected record.
class Journal {
 public:
  ~Journal();
  // expected[i] is the index of the i-th record of the shard. On success
  // *done holds how many of them the file already has.
  bool open(const std::string& path, const std::vector<uint64_t>& expected, size_t* done, std::string* error);
  // Appends whole lines (each ending in '\n') with one write, then fdatasync.
  bool append(const std::string& lines, std::string* error);

 private:
  int fd_ = -1;
  std::string path_;
};

// Joins shard outputs into input order (written atomically to `out`),
// refusing gaps, duplicates, torn lines and shards of different runs.
bool merge_shards(const std::string& out, const std::vector<std::string>& shards, std::string* error);

}  // namespace brisk::tools::batch
