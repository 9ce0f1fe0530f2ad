// SPDX-License-Identifier: MIT
// One line per request and per lifecycle event on stderr, as JSON (for log
// collectors) or as "key=value" text (for people).
#pragma once
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

namespace brisk::serve {

class Logger {
 public:
  explicit Logger(bool json) : json_(json) {}
  // `fields` is a JSON object; "ts", "level" and "event" are added in front.
  void write(const char* level, const char* event, const nlohmann::json& fields = nlohmann::json::object());
  void info(const char* event, const nlohmann::json& fields = nlohmann::json::object()) {
    write("info", event, fields);
  }
  void warn(const char* event, const nlohmann::json& fields = nlohmann::json::object()) {
    write("warn", event, fields);
  }
  void error(const char* event, const nlohmann::json& fields = nlohmann::json::object()) {
    write("error", event, fields);
  }

 private:
  bool json_;
  std::mutex mu_;
};

// JSON text that never throws on bad UTF-8 (replaced by U+FFFD).
std::string dump_json(const nlohmann::json& j);

}  // namespace brisk::serve
