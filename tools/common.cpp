#include "common.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace brisk::tools {

// The library's names ("q4_0", "auto"), so the CLI spells types as brisk.h does.
bool parse_type(const std::string& name, int32_t* out) {
  brisk_type t;
  if (brisk_type_from_name(name.c_str(), &t) != BRISK_OK) return false;
  *out = t;
  return true;
}

const char* type_name(int32_t type) {
  const char* name = brisk_type_name(static_cast<brisk_type>(type));
  return name ? name : "?";
}

bool parse_size(const std::string& text, uint64_t* out) {
  if (text.empty()) return false;
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    return false;
  }
  std::string suffix = text.substr(used);
  double mult = 1;
  if (suffix == "K" || suffix == "k" || suffix == "KiB") mult = 1024.0;
  else if (suffix == "M" || suffix == "MiB") mult = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "GiB") mult = 1024.0 * 1024 * 1024;
  else if (suffix == "KB" || suffix == "kB") mult = 1e3;
  else if (suffix == "MB") mult = 1e6;
  else if (suffix == "GB") mult = 1e9;
  else if (!suffix.empty() && suffix != "B") return false;
  if (!(v > 0)) return false;
  *out = static_cast<uint64_t>(v * mult);
  return true;
}

void ProgressLine::update(uint64_t done, uint64_t total, const std::string& detail) {
  const double now = now_seconds();
  if (t0_ < 0) t0_ = now;
  const bool tty = ::isatty(2);
  if (done < total && now - last_ < (tty ? 0.2 : 5.0)) return;
  last_ = now;
  char eta[32] = "";
  if (done > 0 && total > done) {
    const double left = (now - t0_) / done * (total - done);
    std::snprintf(eta, sizeof eta, ", ETA %dm%02ds", static_cast<int>(left) / 60, static_cast<int>(left) % 60);
  }
  const double pct = total ? 100.0 * done / total : 100.0;
  std::fprintf(stderr, "%s%s: %5.1f%% (%llu/%llu%s) %s%s", tty ? "\r\033[K" : "", what_, pct,
               static_cast<unsigned long long>(done), static_cast<unsigned long long>(total), eta, detail.c_str(),
               tty ? "" : "\n");
  drawn_ = tty;
}

void ProgressLine::finish() {
  if (drawn_) std::fprintf(stderr, "\n");
  drawn_ = false;
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
