// SPDX-License-Identifier: MIT
#include "converters/safetensors.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_depth.h"

namespace brisk::convert {

namespace {

constexpr size_t kMaxDims = 8;
constexpr uint64_t kMaxDim = uint64_t(1) << 40;
constexpr size_t kMaxName = 1 << 16;

struct DtypeInfo {
  const char* name;
  uint32_t size;
};
// Every dtype the format defines, so that a file with (say) I64 tensors is
// read and the converter can say which tensor it cannot convert.
constexpr DtypeInfo kDtypes[] = {{"BOOL", 1}, {"U8", 1},   {"I8", 1},       {"F8_E5M2", 1}, {"F8_E4M3", 1},
                                 {"I16", 2},  {"U16", 2},  {"F16", 2},      {"BF16", 2},    {"I32", 4},
                                 {"U32", 4},  {"F32", 4},  {"F64", 8},      {"I64", 8},     {"U64", 8}};

uint32_t dtype_size(const std::string& s) {
  for (const DtypeInfo& d : kDtypes)
    if (s == d.name) return d.size;
  return 0;
}

[[noreturn]] void bad(const std::string& name, const std::string& what) {
  fail(BRISK_ERR_BAD_FORMAT, "'" + name + "': not a valid safetensors file: " + what);
}

}  // namespace

int64_t StTensor::n_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

bool StTensor::float_type(TensorType* out) const {
  if (dtype == "F32") *out = TensorType::F32;
  else if (dtype == "F16") *out = TensorType::F16;
  else if (dtype == "BF16") *out = TensorType::BF16;
  else return false;
  return true;
}

std::string StTensor::shape_string() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

StHeader parse_safetensors(const uint8_t* data, size_t size, const std::string& name) {
  if (size < 8) bad(name, "only " + std::to_string(size) + " bytes");
  uint64_t n;
  std::memcpy(&n, data, 8);
  if (n > kMaxSafetensorsHeader) bad(name, "header length " + std::to_string(n) + " is above the 100 MiB limit");
  if (n > size - 8) bad(name, "header length " + std::to_string(n) + " runs past the end of the " + std::to_string(size) + "-byte file");
  StHeader h;
  h.data_start = 8 + n;
  const uint64_t data_size = size - h.data_start;
  const char* text = reinterpret_cast<const char*>(data + 8);
  if (json_nesting_depth(std::string_view(text, static_cast<size_t>(n))) > kMaxJsonDepth)
    bad(name, "the header's JSON is nested too deeply");
  nlohmann::json j = nlohmann::json::parse(text, text + n, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) bad(name, "the header is not valid JSON");
  if (!j.is_object()) bad(name, "the header is not a JSON object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const nlohmann::json& v = it.value();
    if (key == "__metadata__") {
      if (!v.is_object()) bad(name, "__metadata__ is not an object");
      for (auto m = v.begin(); m != v.end(); ++m)
        if (m.value().is_string()) h.metadata[m.key()] = m.value().get<std::string>();
      continue;
    }
    const std::string where = "tensor '" + key.substr(0, 200) + "'";
    if (key.empty() || key.size() > kMaxName) bad(name, "a tensor name is empty or too long");
    if (!v.is_object()) bad(name, where + " is not an object");
    StTensor t;
    t.name = key;
    auto dt = v.find("dtype");
    if (dt == v.end() || !dt->is_string()) bad(name, where + " has no dtype string");
    t.dtype = dt->get<std::string>();
    t.elem_size = dtype_size(t.dtype);
    if (!t.elem_size) bad(name, where + " has unknown dtype '" + t.dtype.substr(0, 32) + "'");
    auto sh = v.find("shape");
    if (sh == v.end() || !sh->is_array() || sh->size() > kMaxDims) bad(name, where + " has no shape (an array of up to 8 sizes)");
    uint64_t n_el = 1;
    for (const nlohmann::json& d : *sh) {
      if (!d.is_number_unsigned() || d.get<uint64_t>() > kMaxDim) bad(name, where + " has an invalid dimension");
      if (__builtin_mul_overflow(n_el, d.get<uint64_t>(), &n_el) || n_el > data_size)
        bad(name, where + " has more elements than the file has bytes");
      t.shape.push_back(static_cast<int64_t>(d.get<uint64_t>()));
    }
    auto off = v.find("data_offsets");
    if (off == v.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
        !(*off)[1].is_number_unsigned())
      bad(name, where + " has no data_offsets [begin, end]");
    t.begin = (*off)[0].get<uint64_t>();
    t.end = (*off)[1].get<uint64_t>();
    if (t.begin > t.end || t.end > data_size)
      bad(name, where + " data [" + std::to_string(t.begin) + ", " + std::to_string(t.end) + ") lies outside the " +
          std::to_string(data_size) + "-byte data section (truncated or corrupt)");
    uint64_t bytes;
    if (__builtin_mul_overflow(n_el, static_cast<uint64_t>(t.elem_size), &bytes) || bytes != t.end - t.begin)
      bad(name, where + " (" + t.dtype + " " + t.shape_string() + ") needs " + std::to_string(n_el) + " x " +
          std::to_string(t.elem_size) + " bytes but data_offsets give " + std::to_string(t.end - t.begin));
    t.data = data + h.data_start + t.begin;
    h.tensors.push_back(std::move(t));
  }
  std::sort(h.tensors.begin(), h.tensors.end(), [](const StTensor& a, const StTensor& b) { return a.begin < b.begin; });
  return h;
}

SafetensorsFile::SafetensorsFile(const std::string& path, const MapOptions& map) : map_(path, map) {
  header_ = parse_safetensors(map_.data(), map_.size(), path);
  for (size_t i = 0; i < header_.tensors.size(); ++i) index_[header_.tensors[i].name] = i;
}

const StTensor* SafetensorsFile::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &header_.tensors[it->second];
}

}  // namespace brisk::convert
