// SPDX-License-Identifier: MIT
#include "serve/log.h"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace brisk::serve {

std::string dump_json(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

std::string utc_now() {
  using namespace std::chrono;
  const auto now = system_clock::now();
  const std::time_t t = system_clock::to_time_t(now);
  const long ms = static_cast<long>(duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
  return buf;
}

}  // namespace

void Logger::write(const char* level, const char* event, const nlohmann::json& fields) {
  std::string line;
  if (json_) {
    nlohmann::ordered_json j;
    j["ts"] = utc_now();
    j["level"] = level;
    j["event"] = event;
    for (auto it = fields.begin(); it != fields.end(); ++it) j[it.key()] = it.value();
    line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } else {
    line = utc_now() + " " + level + " " + event;
    for (auto it = fields.begin(); it != fields.end(); ++it) {
      line += " " + it.key() + "=";
      line += it.value().is_string() ? it.value().get<std::string>() : dump_json(it.value());
    }
  }
  line += "\n";
  std::lock_guard<std::mutex> lock(mu_);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace brisk::serve
