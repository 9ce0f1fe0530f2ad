// SPDX-License-Identifier: MIT
// A read-only memory map of a whole file. Opening checks that the path is a
// regular, readable file so that directories and devices fail with a clear message.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace brisk {

// How a file is brought into memory.
struct MapOptions {
  // Lock its pages in RAM (mlock), so they are never paged out; refused
  // with the RLIMIT_MEMLOCK numbers when the limit is too low.
  bool lock = false;
  // Read it into anonymous memory instead of mapping it: for network
  // filesystems, whose mapped pages are fetched on demand and may go stale.
  bool read_into_memory = false;
};

class MappedFile {
 public:
  explicit MappedFile(const std::string& path, const MapOptions& options = {});
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  const MapOptions& options() const { return options_; }
  // Ask the kernel to read ahead (MADV_WILLNEED) a range; purely advisory.
  void prefetch(size_t offset, size_t len) const;
  // release_pages(p, n, options()): for a range of this file.
  void release(const void* p, size_t n) const;

 private:
  std::string path_;
  MapOptions options_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Tells the kernel that [p, p + n) of a read-only mapping will not be read
// again (MADV_DONTNEED on the whole pages inside the range), so streaming
// through a large file keeps this process's resident memory small. The pages
// stay in the page cache; reading them again just maps them back. Anonymous
// memory (a file read with read_into_memory) is freed instead and reads
// back as zeros: there, use it only for bytes nobody reads again.
void release_pages(const void* p, size_t n);

// release_pages for bytes of a file brought in with `how`, safe when they
// are read again (a converter's source hash after its tensors, pack's
// compression after its checksum pass): a mapping's pages are released, a
// copy read into memory is kept, since releasing it would lose the bytes.
void release_pages(const void* p, size_t n, const MapOptions& how);

}  // namespace brisk
