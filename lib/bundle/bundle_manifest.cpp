// SPDX-License-Identifier: MIT
// The bundle manifest's JSON form and its validation. The JSON comes from
// an untrusted file, so every field is type- and range-checked and
// nlohmann::json is used without exceptions (parse errors are values).
#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "bundle/pack.h"
#include "core/error.h"
#include "core/json_depth.h"

namespace brisk::bundle {

namespace {

constexpr uint64_t kMaxGgufSize = uint64_t(1) << 48;
constexpr size_t kMaxSegments = size_t(1) << 20;
constexpr size_t kMaxName = 4096;

[[noreturn]] void bad(const std::string& what) { fail(BRISK_ERR_BAD_FORMAT, "bundle manifest: " + what); }

const nlohmann::json& field(const nlohmann::json& obj, const char* key, nlohmann::json::value_t type,
                            const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) bad(where + ": '" + key + "' is missing");
  const bool ok = type == nlohmann::json::value_t::number_unsigned
                      ? it->is_number_unsigned()
                      : it->type() == type;
  if (!ok) bad(where + ": '" + key + "' has the wrong type");
  return *it;
}

}  // namespace

std::string BundleManifest::to_json() const {
  nlohmann::json j;
  j["format"] = "brisk-bundle";
  j["version"] = version;
  j["tool"] = tool;
  j["gguf_size"] = gguf_size;
  j["gguf_manifest"] = gguf_manifest;
  j["compression"] = {{"codec", "zstd"}, {"level", level}, {"long_distance", long_distance}};
  nlohmann::json segs = nlohmann::json::array();
  for (const Segment& s : segments)
    segs.push_back({{"name", s.name}, {"offset", s.offset}, {"size", s.size}, {"xxh3_128", s.hash.hex()}});
  j["segments"] = std::move(segs);
  // Invalid UTF-8 in a tensor name must not make dump() throw: replace it.
  return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
}

BundleManifest BundleManifest::from_json(const std::string& text) {
  using vt = nlohmann::json::value_t;
  if (json_nesting_depth(text) > kMaxJsonDepth) bad("JSON nested too deeply");
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) bad("not valid JSON");
  if (!j.is_object()) bad("not a JSON object");
  if (field(j, "format", vt::string, "top level").get<std::string>() != "brisk-bundle")
    bad("'format' is not \"brisk-bundle\"");
  BundleManifest m;
  const uint64_t v = field(j, "version", vt::number_unsigned, "top level").get<uint64_t>();
  if (v != kBundleVersion)
    fail(BRISK_ERR_UNSUPPORTED, "bundle manifest version " + std::to_string(v) + " is not supported");
  m.version = static_cast<uint32_t>(v);
  m.tool = field(j, "tool", vt::string, "top level").get<std::string>();
  m.gguf_size = field(j, "gguf_size", vt::number_unsigned, "top level").get<uint64_t>();
  if (m.gguf_size == 0 || m.gguf_size > kMaxGgufSize) bad("gguf_size " + std::to_string(m.gguf_size) + " is out of range");
  m.gguf_manifest = field(j, "gguf_manifest", vt::boolean, "top level").get<bool>();
  const nlohmann::json& segs = field(j, "segments", vt::array, "top level");
  if (segs.empty() || segs.size() > kMaxSegments) bad("segment count " + std::to_string(segs.size()) + " is out of range");
  uint64_t pos = 0;
  m.segments.reserve(segs.size());
  for (size_t i = 0; i < segs.size(); ++i) {
    const std::string where = "segment " + std::to_string(i);
    if (!segs[i].is_object()) bad(where + " is not an object");
    Segment s;
    s.name = field(segs[i], "name", vt::string, where).get<std::string>();
    if (s.name.empty() || s.name.size() > kMaxName) bad(where + ": name length out of range");
    s.offset = field(segs[i], "offset", vt::number_unsigned, where).get<uint64_t>();
    s.size = field(segs[i], "size", vt::number_unsigned, where).get<uint64_t>();
    auto h = Hash128::from_hex(field(segs[i], "xxh3_128", vt::string, where).get<std::string>());
    if (!h) bad(where + ": xxh3_128 is not 32 lower-case hex digits");
    s.hash = *h;
    // Segments tile the file exactly: every byte is checked exactly once.
    if (s.offset != pos) bad(where + " starts at " + std::to_string(s.offset) + ", expected " + std::to_string(pos));
    if (s.size == 0 || s.size > m.gguf_size - pos) bad(where + " has size " + std::to_string(s.size) + ", out of range");
    pos += s.size;
    m.segments.push_back(std::move(s));
  }
  if (pos != m.gguf_size) bad("segments cover " + std::to_string(pos) + " of " + std::to_string(m.gguf_size) + " bytes");
  if (const auto c = j.find("compression"); c != j.end() && c->is_object()) {
    if (auto l = c->find("level"); l != c->end() && l->is_number_integer())
      m.level = static_cast<int>(std::clamp<int64_t>(l->get<int64_t>(), -1000, 1000));
    if (auto d = c->find("long_distance"); d != c->end() && d->is_boolean()) m.long_distance = d->get<bool>();
  }
  return m;
}

size_t MemorySource::read(void* buf, size_t n) {
  const size_t k = std::min(n, n_ - pos_);
  if (k) std::memcpy(buf, p_ + pos_, k);
  pos_ += k;
  return k;
}

}  // namespace brisk::bundle
