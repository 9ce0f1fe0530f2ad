#include "common.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace brisk::tools {

bool parse_type(const std::string& name, int32_t* out) {
  static const struct {
    const char* name;
    brisk_type type;
  } kTypes[] = {{"auto", BRISK_TYPE_AUTO}, {"f32", BRISK_TYPE_F32},   {"f16", BRISK_TYPE_F16},
                {"bf16", BRISK_TYPE_BF16}, {"q8_0", BRISK_TYPE_Q8_0}, {"q4_0", BRISK_TYPE_Q4_0},
                {"q4_1", BRISK_TYPE_Q4_1}, {"q4_k", BRISK_TYPE_Q4_K}, {"q5_k", BRISK_TYPE_Q5_K},
                {"q6_k", BRISK_TYPE_Q6_K}};
  for (const auto& t : kTypes) {
    if (name == t.name) {
      *out = t.type;
      return true;
    }
  }
  return false;
}

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
