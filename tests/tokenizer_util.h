// SPDX-License-Identifier: MIT
// Helpers for the tokenizer tests: llama.cpp's vocab test files and text.
#pragma once
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

namespace brisk::test {

inline std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// llama.cpp's test-tokenizer-0 layout: X.inp holds strings each followed by
// "\n__ggml_vocab_test__\n"; X.out has one line of space-separated ids per
// string (tokenized with add_special=false, parse_special=false).
struct VocabCase {
  std::string text;
  std::vector<int32_t> ids;
};

inline std::vector<VocabCase> read_vocab_cases(const std::string& inp_path, const std::string& out_path) {
  const std::string inp = read_all(inp_path), out = read_all(out_path);
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<VocabCase> cases;
  for (size_t pos = 0;;) {
    size_t next = inp.find(sep, pos);
    if (next == std::string::npos) break;
    cases.push_back({inp.substr(pos, next - pos), {}});
    pos = next + sep.size();
  }
  std::istringstream lines(out);
  std::string line;
  for (size_t i = 0; i < cases.size() && std::getline(lines, line); ++i) {
    std::istringstream ls(line);
    int64_t id;
    while (ls >> id) cases[i].ids.push_back(static_cast<int32_t>(id));
  }
  return cases;
}

inline std::string ids_string(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) {
    s += ' ';
    s += std::to_string(id);
  }
  return s;
}

inline std::vector<std::string> read_lines(const std::string& path, size_t max_lines) {
  std::ifstream f(path, std::ios::binary);
  std::vector<std::string> lines;
  std::string line;
  while (lines.size() < max_lines && std::getline(f, line)) lines.push_back(line);
  return lines;
}

}  // namespace brisk::test
