// SPDX-License-Identifier: MIT
#include "cmd_batch_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace brisk::tools::batch {

namespace {

bool slurp(const std::string& path, std::string* out, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = "cannot read '" + path + "': " + std::strerror(errno);
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

std::string fnv1a64_hex(const std::string& bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

bool blank(const std::string& s) { return s.find_first_not_of(" \t\r") == std::string::npos; }

std::string directory_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
}

// Writes bytes to a temporary beside `path`, syncs, renames, syncs the
// directory: after a crash the file is either the old one or the new one.
bool write_atomically(const std::string& path, const std::string& bytes, std::string* error) {
  const std::string tmp = path + ".tmp." + std::to_string(static_cast<long>(::getpid()));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    *error = "cannot create '" + tmp + "': " + std::strerror(errno);
    return false;
  }
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + off, bytes.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *error = "cannot write '" + tmp + "': " + std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return false;
    }
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    *error = "cannot write '" + path + "': " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  const int dir = ::open(directory_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return true;
}

// The record index of an output line; false if it is not a JSON object with one.
bool line_index(const std::string& line, uint64_t* index) {
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return false;
  auto it = j.find("index");
  if (it == j.end() || !it->is_number_unsigned()) return false;
  *index = it->get<uint64_t>();
  return true;
}

void difference(const nlohmann::json& a, const nlohmann::json& b, const std::string& path, std::string* first) {
  if (!first->empty()) return;
  if (a.is_object() && b.is_object()) {
    std::set<std::string> keys;
    for (auto it = a.begin(); it != a.end(); ++it) keys.insert(it.key());
    for (auto it = b.begin(); it != b.end(); ++it) keys.insert(it.key());
    for (const std::string& k : keys) {
      const nlohmann::json none;
      difference(a.contains(k) ? a[k] : none, b.contains(k) ? b[k] : none, path.empty() ? k : path + "." + k, first);
    }
    return;
  }
  if (a != b) *first = path + " (was " + a.dump() + ", now " + b.dump() + ")";
}

}  // namespace

bool read_input(const std::string& path, uint32_t shard_k, uint32_t shard_n, Input* out, std::string* error) {
  std::string bytes;
  if (!slurp(path, &bytes, error)) return false;
  out->bytes = bytes.size();
  out->hash = fnv1a64_hex(bytes);
  size_t start = 0;
  uint64_t line_no = 0;
  while (start < bytes.size()) {
    size_t end = bytes.find('\n', start);
    if (end == std::string::npos) end = bytes.size();
    ++line_no;
    std::string line = bytes.substr(start, end - start);
    start = end + 1;
    if (blank(line)) continue;
    const uint64_t index = out->total++;
    if (index % shard_n == shard_k) out->records.push_back({index, line_no, std::move(line)});
  }
  return true;
}

std::string sidecar_path(const std::string& output) { return output + ".batch.json"; }

bool write_sidecar(const std::string& output, const nlohmann::ordered_json& meta, std::string* error) {
  return write_atomically(sidecar_path(output), meta.dump(2) + "\n", error);
}

bool read_sidecar(const std::string& output, nlohmann::json* meta, std::string* error) {
  error->clear();
  const std::string p = sidecar_path(output);
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return false;
  std::string bytes;
  if (!slurp(p, &bytes, error)) return false;
  *meta = nlohmann::json::parse(bytes, nullptr, false);
  if (meta->is_discarded() || !meta->is_object() || meta->value("format", "") != "brisk-batch 1") {
    *error = "'" + p + "' is not a brisk batch sidecar";
    return false;
  }
  return true;
}

std::string sidecar_difference(const nlohmann::json& was, const nlohmann::json& now) {
  std::string first;
  difference(was, now, "", &first);
  return first;
}

Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);
}

bool Journal::open(const std::string& path, const std::vector<uint64_t>& expected, size_t* done, std::string* error) {
  path_ = path;
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    *error = "cannot open '" + path + "': " + std::strerror(errno);
    return false;
  }
  // The new file's directory entry must survive a power cut too.
  const int dir = ::open(directory_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  std::string bytes;
  if (!slurp(path, &bytes, error)) return false;
  // Walk the complete lines; the first that is not a record starts the torn
  // tail, which may only be followed by more damage (a write that the crash
  // cut short, or blocks the filesystem never filled), never by records.
  size_t start = 0, keep = 0, n = 0;
  bool torn = false;
  while (start < bytes.size()) {
    const size_t end = bytes.find('\n', start);
    if (end == std::string::npos) break;  // no newline: cut short
    const std::string line = bytes.substr(start, end - start);
    uint64_t index = 0;
    const bool ok = line_index(line, &index);
    if (ok && torn) {
      *error = "'" + path + "' has a damaged line before record " + std::to_string(index) +
               "; it was not written by an interrupted run of brisk batch";
      return false;
    }
    if (ok) {
      if (n >= expected.size() || index != expected[n]) {
        *error = "'" + path + "' line " + std::to_string(n + 1) + " holds record " + std::to_string(index) +
                 ", expected " + (n < expected.size() ? std::to_string(expected[n]) : std::string("none (too many)")) +
                 "; it belongs to another input or shard";
        return false;
      }
      ++n;
      keep = end + 1;
    } else {
      torn = true;
    }
    start = end + 1;
  }
  if (keep < bytes.size()) {
    std::fprintf(stderr, "brisk batch: trimming a torn last record (%zu bytes) from '%s'\n", bytes.size() - keep,
                 path.c_str());
    if (::ftruncate(fd_, static_cast<off_t>(keep)) != 0 || ::fsync(fd_) != 0) {
      *error = "cannot trim '" + path + "': " + std::strerror(errno);
      return false;
    }
  }
  if (::lseek(fd_, 0, SEEK_END) < 0) {
    *error = "cannot seek in '" + path + "': " + std::strerror(errno);
    return false;
  }
  *done = n;
  return true;
}

bool Journal::append(const std::string& lines, std::string* error) {
  size_t off = 0;
  while (off < lines.size()) {
    const ssize_t n = ::write(fd_, lines.data() + off, lines.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *error = "cannot write '" + path_ + "': " + std::strerror(errno);
      return false;
    }
    off += static_cast<size_t>(n);
  }
  if (::fdatasync(fd_) != 0) {
    *error = "cannot sync '" + path_ + "': " + std::strerror(errno);
    return false;
  }
  return true;
}

bool merge_shards(const std::string& out, const std::vector<std::string>& shards, std::string* error) {
  if (shards.empty()) {
    *error = "no shard outputs given";
    return false;
  }
  std::map<uint64_t, std::pair<std::string, size_t>> lines;  // index -> (line, shard)
  nlohmann::json first_meta;
  std::set<uint64_t> shard_ks;
  uint64_t total = 0, shard_n = 0;
  bool have_meta = false;
  size_t without_meta = 0;
  for (size_t s = 0; s < shards.size(); ++s) {
    const std::string& path = shards[s];
    std::string bytes;
    if (!slurp(path, &bytes, error)) return false;
    if (!bytes.empty() && bytes.back() != '\n') {
      *error = "'" + path + "' ends in a torn line: finish that shard (run its command again) first";
      return false;
    }
    nlohmann::json meta;
    if (read_sidecar(path, &meta, error)) {
      nlohmann::json shard = meta.value("shard", nlohmann::json::array());
      if (!shard.is_array() || shard.size() != 2 || !shard[0].is_number_unsigned() || !shard[1].is_number_unsigned()) {
        *error = "'" + sidecar_path(path) + "' has no valid shard field";
        return false;
      }
      meta.erase("shard");
      if (!have_meta) {
        first_meta = meta;
        shard_n = shard[1].get<uint64_t>();
        total = meta["input"].value("records", uint64_t{0});
        have_meta = true;
      } else {
        const std::string diff = sidecar_difference(first_meta, meta);
        if (!diff.empty()) {
          *error = "'" + path + "' comes from a different run than '" + shards[0] + "': " + diff;
          return false;
        }
        if (shard[1].get<uint64_t>() != shard_n) {
          *error = "'" + path + "' was split into " + shard[1].dump() + " shards, not " + std::to_string(shard_n);
          return false;
        }
      }
      if (!shard_ks.insert(shard[0].get<uint64_t>()).second) {
        *error = "shard " + shard[0].dump() + " is given twice ('" + path + "')";
        return false;
      }
    } else if (!error->empty()) {
      return false;
    } else {
      ++without_meta;
    }
    if (have_meta && without_meta > 0) {
      *error = "some shard outputs have no sidecar (" + sidecar_path(path).substr(path.size()) +
               ") and others do: they are not shards of one run";
      return false;
    }
    size_t start = 0, line_no = 0;
    while (start < bytes.size()) {
      const size_t end = bytes.find('\n', start);
      std::string line = bytes.substr(start, end - start + 1);
      start = end + 1;
      ++line_no;
      uint64_t index = 0;
      if (!line_index(line, &index)) {
        *error = "'" + path + "' line " + std::to_string(line_no) + " is not a brisk batch record";
        return false;
      }
      auto [it, fresh] = lines.emplace(index, std::make_pair(std::move(line), s));
      if (!fresh) {
        *error = "record " + std::to_string(index) + " appears twice ('" + shards[it->second.second] + "' and '" +
                 path + "')";
        return false;
      }
    }
  }
  if (!have_meta) total = lines.empty() ? 0 : lines.rbegin()->first + 1;
  if (have_meta && shard_ks.size() != shard_n) {
    *error = std::to_string(shard_ks.size()) + " of " + std::to_string(shard_n) + " shards given";
    return false;
  }
  std::string merged;
  uint64_t expect = 0;
  for (const auto& [index, entry] : lines) {
    if (index != expect) {
      *error = "record " + std::to_string(expect) + " is missing (" + std::to_string(index - expect) +
               " records missing before record " + std::to_string(index) + ")";
      return false;
    }
    merged += entry.first;
    ++expect;
  }
  if (expect != total) {
    *error = "records " + std::to_string(expect) + " to " + std::to_string(total - 1) + " are missing";
    return false;
  }
  return write_atomically(out, merged, error);
}

}  // namespace brisk::tools::batch
