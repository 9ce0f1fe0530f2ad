// SPDX-License-Identifier: MIT
#include "system/sysfs.h"

#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace brisk::sys {

std::optional<std::string> read_text(const std::string& root, const std::string& path) {
  std::ifstream in(root + path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return ss.str();
}

std::optional<std::string> read_line(const std::string& root, const std::string& path) {
  std::optional<std::string> t = read_text(root, path);
  if (!t) return t;
  const size_t nl = t->find('\n');
  if (nl != std::string::npos) t->resize(nl);
  return t;
}

std::optional<uint64_t> read_u64(const std::string& root, const std::string& path) {
  std::optional<std::string> t = read_line(root, path);
  if (!t) return std::nullopt;
  std::istringstream in(*t);
  std::string word;
  if (!(in >> word) || word.empty() || word.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  try {
    return std::stoull(word);
  } catch (...) {
    return std::nullopt;
  }
}

std::vector<std::string> list_dir(const std::string& root, const std::string& path) {
  std::vector<std::string> names;
  DIR* d = ::opendir((root + path).c_str());
  if (!d) return names;
  while (dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

std::map<std::string, uint64_t> meminfo(const std::string& root) {
  std::map<std::string, uint64_t> m;
  std::optional<std::string> t = read_text(root, "/proc/meminfo");
  if (!t) return m;
  std::istringstream in(*t);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string key, unit;
    uint64_t v = 0;
    if (!(ls >> key >> v)) continue;
    ls >> unit;
    if (!key.empty() && key.back() == ':') key.pop_back();
    m[key] = unit == "kB" ? v * 1024 : v;
  }
  return m;
}

}  // namespace brisk::sys
