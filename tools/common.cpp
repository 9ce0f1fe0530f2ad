#include "common.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace brisk::tools {

bool read_file(const char* cmd, const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "brisk %s: error: cannot read '%s': %s\n", cmd, path.c_str(), std::strerror(errno));
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

}  // namespace brisk::tools
