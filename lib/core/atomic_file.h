// SPDX-License-Identifier: MIT
// Output files that appear complete or not at all: bytes go to a temporary
// file beside the target (same directory, so the final rename is atomic), and
// only commit() renames it into place. Destroying an uncommitted AtomicFile
// removes the temporary, so a failure or an exception leaves no partial file.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>

namespace brisk {

class AtomicFile {
 public:
  // Creates "<target>.tmp.<16 random hex digits>" exclusively (O_EXCL,
  // O_NOFOLLOW: never an existing file or a symlink) for writing.
  explicit AtomicFile(const std::string& target);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* p, size_t n);
  // Overwrites bytes already written (e.g. checksums known only at the end).
  void patch(uint64_t offset, const void* p, size_t n);
  // Makes everything written so far visible to readers of temp_path().
  void flush();
  uint64_t written() const { return written_; }
  const std::string& temp_path() const { return tmp_; }
  const std::string& target() const { return target_; }
  // fsync, close, rename onto the target, then fsync the directory.
  void commit();

 private:
  std::string target_, tmp_;
  FILE* f_ = nullptr;
  uint64_t written_ = 0;
  bool committed_ = false;
};

// Writes bytes to path through an AtomicFile.
void write_file_atomic(const std::string& path, const std::string& bytes);

}  // namespace brisk
