// SPDX-License-Identifier: MIT
// Reading /proc and /sys through a root prefix: "" reads this machine, a
// directory reads a fake tree (tests give each WARN/FAIL path its files).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace brisk::sys {

// The whole file root + path; nullopt if it cannot be read.
std::optional<std::string> read_text(const std::string& root, const std::string& path);
// Its first line without the newline.
std::optional<std::string> read_line(const std::string& root, const std::string& path);
// Its first word as an unsigned number; nullopt if absent or not a number.
std::optional<uint64_t> read_u64(const std::string& root, const std::string& path);
// Names in a directory (no "." or ".."), sorted; empty if unreadable.
std::vector<std::string> list_dir(const std::string& root, const std::string& path);
// /proc/meminfo as key -> bytes ("MemAvailable" -> ...).
std::map<std::string, uint64_t> meminfo(const std::string& root);

}  // namespace brisk::sys
