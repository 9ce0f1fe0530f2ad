// SPDX-License-Identifier: MIT
#include "gguf/writer.h"

#include <algorithm>

#include "core/atomic_file.h"
#include "core/error.h"

namespace brisk::gguf {

namespace {

template <class T>
void put(std::string& s, T v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof(T));
}
void put_str(std::string& s, const std::string& v) {
  put<uint64_t>(s, v.size());
  s.append(v);
}

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

void put_value_payload(std::string& s, const Value& v) {
  switch (v.type) {
    case ValueType::UINT8: case ValueType::INT8: case ValueType::BOOL: put<uint8_t>(s, static_cast<uint8_t>(v.u)); break;
    case ValueType::UINT16: case ValueType::INT16: put<uint16_t>(s, static_cast<uint16_t>(v.u)); break;
    case ValueType::UINT32: case ValueType::INT32: put<uint32_t>(s, static_cast<uint32_t>(v.u)); break;
    case ValueType::UINT64: case ValueType::INT64: put<uint64_t>(s, v.u); break;
    case ValueType::FLOAT32: put<float>(s, static_cast<float>(v.f)); break;
    case ValueType::FLOAT64: put<double>(s, v.f); break;
    case ValueType::STRING: put_str(s, std::string(v.str)); break;
    case ValueType::ARRAY: {
      put<uint32_t>(s, static_cast<uint32_t>(v.elem_type));
      put<uint64_t>(s, v.count);
      if (v.data) {
        // Fixed-size elements: the bytes as they were.
        Value probe;
        size_t each = 0;
        switch (v.elem_type) {
          case ValueType::UINT8: case ValueType::INT8: case ValueType::BOOL: each = 1; break;
          case ValueType::UINT16: case ValueType::INT16: each = 2; break;
          case ValueType::UINT32: case ValueType::INT32: case ValueType::FLOAT32: each = 4; break;
          default: each = 8; break;
        }
        s.append(reinterpret_cast<const char*>(v.data), static_cast<size_t>(v.count) * each);
      } else {
        for (const Value& item : v.items) put_value_payload(s, item);
      }
      break;
    }
  }
}

}  // namespace

void Writer::set_alignment(uint32_t a) {
  if (a == 0 || (a & (a - 1)) != 0) fail(BRISK_ERR_INVALID_ARGUMENT, "GGUF alignment must be a power of two");
  alignment_ = a;
  if (!has_key("general.alignment")) add_u32("general.alignment", a);
}

bool Writer::has_key(const std::string& key) const { return std::find(keys_.begin(), keys_.end(), key) != keys_.end(); }

void Writer::begin_kv(const std::string& key, ValueType type) {
  if (has_key(key)) fail(BRISK_ERR_INVALID_ARGUMENT, "GGUF key '" + key + "' added twice");
  keys_.push_back(key);
  put_str(kv_, key);
  put<uint32_t>(kv_, static_cast<uint32_t>(type));
  ++n_kv_;
}

void Writer::add_string(const std::string& k, const std::string& v) { begin_kv(k, ValueType::STRING); put_str(kv_, v); }
void Writer::add_u32(const std::string& k, uint32_t v) { begin_kv(k, ValueType::UINT32); put(kv_, v); }
void Writer::add_i32(const std::string& k, int32_t v) { begin_kv(k, ValueType::INT32); put(kv_, v); }
void Writer::add_u64(const std::string& k, uint64_t v) { begin_kv(k, ValueType::UINT64); put(kv_, v); }
void Writer::add_f32(const std::string& k, float v) { begin_kv(k, ValueType::FLOAT32); put(kv_, v); }
void Writer::add_bool(const std::string& k, bool v) { begin_kv(k, ValueType::BOOL); put<uint8_t>(kv_, v ? 1 : 0); }

void Writer::add_strings(const std::string& k, const std::vector<std::string>& v) {
  begin_kv(k, ValueType::ARRAY);
  put<uint32_t>(kv_, static_cast<uint32_t>(ValueType::STRING));
  put<uint64_t>(kv_, v.size());
  for (const std::string& s : v) put_str(kv_, s);
}
void Writer::add_f32s(const std::string& k, const std::vector<float>& v) {
  begin_kv(k, ValueType::ARRAY);
  put<uint32_t>(kv_, static_cast<uint32_t>(ValueType::FLOAT32));
  put<uint64_t>(kv_, v.size());
  kv_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}
void Writer::add_i32s(const std::string& k, const std::vector<int32_t>& v) {
  begin_kv(k, ValueType::ARRAY);
  put<uint32_t>(kv_, static_cast<uint32_t>(ValueType::INT32));
  put<uint64_t>(kv_, v.size());
  kv_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int32_t));
}
void Writer::add_value(const std::string& k, const Value& v) {
  begin_kv(k, v.type);
  put_value_payload(kv_, v);
}

size_t Writer::add_tensor(const std::string& name, TensorType type, const std::vector<int64_t>& ne) {
  if (ne.empty() || ne.size() > 4) fail(BRISK_ERR_INVALID_ARGUMENT, "tensor '" + name + "' needs 1 to 4 dimensions");
  for (const TensorEntry& t : tensors_)
    if (t.name == name) fail(BRISK_ERR_INVALID_ARGUMENT, "tensor '" + name + "' added twice");
  const TypeTraits& tr = type_traits(type);
  if (ne[0] % tr.block_size != 0)
    fail(BRISK_ERR_INVALID_ARGUMENT, "tensor '" + name + "': row length " + std::to_string(ne[0]) +
                                         " is not a multiple of " + tr.name + "'s block size");
  int64_t n = 1;
  for (int64_t d : ne) n *= d;
  TensorEntry e{name, type, ne, static_cast<uint64_t>(n / tr.block_size) * tr.type_size, 0};
  data_size_ = align_up(data_size_, alignment_);
  e.offset = data_size_;
  data_size_ += e.n_bytes;
  tensors_.push_back(std::move(e));
  return tensors_.size() - 1;
}

std::string Writer::header_bytes() const {
  std::string h;
  put<uint32_t>(h, 0x46554747);
  put<uint32_t>(h, 3);
  put<uint64_t>(h, tensors_.size());
  put<uint64_t>(h, n_kv_);
  h += kv_;
  for (const TensorEntry& t : tensors_) {
    put_str(h, t.name);
    put<uint32_t>(h, static_cast<uint32_t>(t.ne.size()));
    for (int64_t d : t.ne) put<uint64_t>(h, static_cast<uint64_t>(d));
    put<uint32_t>(h, static_cast<uint32_t>(t.type));
    put<uint64_t>(h, t.offset);
  }
  return h;
}

void Writer::write(const std::string& path, const Producer& produce, const Finish& finish) const {
  AtomicFile out(path);
  std::string header = header_bytes();
  out.write(header.data(), header.size());
  static const char zeros[4096] = {};
  auto pad_to = [&](uint64_t pos) {
    while (out.written() < pos) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(sizeof zeros, pos - out.written()));
      out.write(zeros, n);
    }
  };
  const uint64_t data_start = align_up(header.size(), alignment_);
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const TensorEntry& t = tensors_[i];
    pad_to(data_start + t.offset);
    uint64_t before = out.written();
    produce(i, [&](const void* p, size_t n) { out.write(p, n); });
    if (out.written() - before != t.n_bytes)
      fail(BRISK_ERR_INTERNAL, "tensor '" + t.name + "': wrote " + std::to_string(out.written() - before) +
                                   " bytes, expected " + std::to_string(t.n_bytes));
  }
  if (tensors_.empty()) pad_to(data_start);
  if (finish) finish(out);
  out.commit();
}

}  // namespace brisk::gguf
