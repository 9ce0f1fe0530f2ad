// SPDX-License-Identifier: MIT
#include "gguf/gguf.h"

#include <cstdio>
#include <cstring>
#include <limits>

#include "core/error.h"

namespace brisk::gguf {

namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" little-endian
constexpr uint32_t kMaxDims = 4;
// Nested arrays deeper than this are not produced by any writer we know and
// would let a hostile file recurse without bound.
constexpr int kMaxArrayDepth = 4;
constexpr uint64_t kMaxNameLen = 1 << 16;

bool add_overflows(uint64_t a, uint64_t b, uint64_t* out) { return __builtin_add_overflow(a, b, out); }
bool mul_overflows(uint64_t a, uint64_t b, uint64_t* out) { return __builtin_mul_overflow(a, b, out); }

// Size of a fixed-size element, 0 for STRING/ARRAY, and -1 for unknown types.
int fixed_size(ValueType t) {
  switch (t) {
    case ValueType::UINT8:
    case ValueType::INT8:
    case ValueType::BOOL: return 1;
    case ValueType::UINT16:
    case ValueType::INT16: return 2;
    case ValueType::UINT32:
    case ValueType::INT32:
    case ValueType::FLOAT32: return 4;
    case ValueType::UINT64:
    case ValueType::INT64:
    case ValueType::FLOAT64: return 8;
    case ValueType::STRING:
    case ValueType::ARRAY: return 0;
  }
  return -1;
}

// Decodes one fixed-size scalar at p into v.
void decode_scalar(ValueType t, const uint8_t* p, Value& v) {
  v.type = t;
  switch (t) {
    case ValueType::UINT8: v.u = p[0]; v.i = static_cast<int64_t>(v.u); break;
    case ValueType::BOOL: v.u = p[0] != 0; v.i = static_cast<int64_t>(v.u); break;
    case ValueType::INT8: v.i = static_cast<int8_t>(p[0]); v.u = static_cast<uint64_t>(v.i); break;
    case ValueType::UINT16: { uint16_t x; std::memcpy(&x, p, 2); v.u = x; v.i = x; break; }
    case ValueType::INT16: { int16_t x; std::memcpy(&x, p, 2); v.i = x; v.u = static_cast<uint64_t>(x); break; }
    case ValueType::UINT32: { uint32_t x; std::memcpy(&x, p, 4); v.u = x; v.i = x; break; }
    case ValueType::INT32: { int32_t x; std::memcpy(&x, p, 4); v.i = x; v.u = static_cast<uint64_t>(x); break; }
    case ValueType::UINT64: { std::memcpy(&v.u, p, 8); v.i = static_cast<int64_t>(v.u); break; }
    case ValueType::INT64: { std::memcpy(&v.i, p, 8); v.u = static_cast<uint64_t>(v.i); break; }
    case ValueType::FLOAT32: { float x; std::memcpy(&x, p, 4); v.f = x; break; }
    case ValueType::FLOAT64: { std::memcpy(&v.f, p, 8); break; }
    default: break;
  }
}

// A bounds-checked cursor over the mapped bytes.
class Reader {
 public:
  Reader(const File& file, const uint8_t* data, uint64_t size) : file_(file), data_(data), size_(size) {}
  uint64_t pos() const { return pos_; }

  const uint8_t* take(uint64_t n, const char* what) {
    uint64_t end;
    if (add_overflows(pos_, n, &end) || end > size_)
      file_.fail_format(std::string("truncated file: ") + what + " at offset " + std::to_string(pos_) +
                        " needs " + std::to_string(n) + " bytes, file has " + std::to_string(size_));
    const uint8_t* p = data_ + pos_;
    pos_ = end;
    return p;
  }
  template <class T>
  T read(const char* what) {
    T v;
    std::memcpy(&v, take(sizeof(T), what), sizeof(T));
    return v;
  }
  std::string_view read_string(const char* what) {
    uint64_t len = read<uint64_t>(what);
    const uint8_t* p = take(len, what);
    return {reinterpret_cast<const char*>(p), static_cast<size_t>(len)};
  }
  uint64_t remaining() const { return size_ - pos_; }

 private:
  const File& file_;
  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

void read_value(Reader& r, const File& f, ValueType t, Value& v, int depth, const std::string& key);

void read_array(Reader& r, const File& f, Value& v, int depth, const std::string& key) {
  if (depth >= kMaxArrayDepth) f.fail_format("key '" + key + "': arrays nested too deeply");
  uint32_t et = r.read<uint32_t>("array element type");
  ValueType elem = static_cast<ValueType>(et);
  int sz = fixed_size(elem);
  if (sz < 0) f.fail_format("key '" + key + "': unknown array element type " + std::to_string(et));
  uint64_t count = r.read<uint64_t>("array length");
  v.type = ValueType::ARRAY;
  v.elem_type = elem;
  v.count = count;
  if (sz > 0) {
    uint64_t bytes;
    if (mul_overflows(count, static_cast<uint64_t>(sz), &bytes) || bytes > r.remaining())
      f.fail_format("truncated file: array '" + key + "' of " + std::to_string(count) +
                    " elements runs past the end");
    v.data = r.take(bytes, "array data");
    return;
  }
  // Strings need at least 8 bytes each and arrays at least 12: a count larger
  // than the rest of the file allows is a lie, caught before reserving memory.
  uint64_t min_each = elem == ValueType::STRING ? 8 : 12;
  if (count > r.remaining() / min_each)
    f.fail_format("truncated file: array '" + key + "' claims " + std::to_string(count) +
                  " elements, more than the file can hold");
  v.items.resize(static_cast<size_t>(count));
  for (uint64_t i = 0; i < count; ++i) read_value(r, f, elem, v.items[i], depth + 1, key);
}

void read_value(Reader& r, const File& f, ValueType t, Value& v, int depth, const std::string& key) {
  int sz = fixed_size(t);
  if (sz < 0) f.fail_format("key '" + key + "': unknown value type " + std::to_string(static_cast<uint32_t>(t)));
  if (sz > 0) {
    decode_scalar(t, r.take(static_cast<uint64_t>(sz), "metadata value"), v);
  } else if (t == ValueType::STRING) {
    v.type = t;
    v.str = r.read_string("metadata string");
  } else {
    read_array(r, f, v, depth, key);
  }
}

}  // namespace

const char* value_type_name(ValueType t) {
  switch (t) {
    case ValueType::UINT8: return "uint8";
    case ValueType::INT8: return "int8";
    case ValueType::UINT16: return "uint16";
    case ValueType::INT16: return "int16";
    case ValueType::UINT32: return "uint32";
    case ValueType::INT32: return "int32";
    case ValueType::FLOAT32: return "float32";
    case ValueType::BOOL: return "bool";
    case ValueType::STRING: return "string";
    case ValueType::ARRAY: return "array";
    case ValueType::UINT64: return "uint64";
    case ValueType::INT64: return "int64";
    case ValueType::FLOAT64: return "float64";
  }
  return "unknown";
}

bool Value::is_integer() const {
  switch (type) {
    case ValueType::UINT8:
    case ValueType::INT8:
    case ValueType::UINT16:
    case ValueType::INT16:
    case ValueType::UINT32:
    case ValueType::INT32:
    case ValueType::UINT64:
    case ValueType::INT64: return true;
    default: return false;
  }
}

std::string Value::to_string() const {
  switch (type) {
    case ValueType::STRING: return std::string(str);
    case ValueType::BOOL: return u ? "true" : "false";
    case ValueType::FLOAT32:
    case ValueType::FLOAT64: {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.9g", f);
      return buf;
    }
    case ValueType::ARRAY:
    {
      // Built piecewise: GCC 12 warns falsely (-Wrestrict) on the one-expression form.
      std::string s("[");
      s += std::to_string(count);
      s += ' ';
      s += value_type_name(elem_type);
      s += ']';
      return s;
    }
    case ValueType::INT8:
    case ValueType::INT16:
    case ValueType::INT32:
    case ValueType::INT64: return std::to_string(i);
    default: return std::to_string(u);
  }
}

double Value::number_at(uint64_t idx) const {
  Value e;
  int sz = fixed_size(elem_type);
  if (type != ValueType::ARRAY || sz <= 0 || idx >= count) return 0;
  decode_scalar(elem_type, data + idx * static_cast<uint64_t>(sz), e);
  return e.is_float() ? e.f : (e.type == ValueType::INT8 || e.type == ValueType::INT16 ||
                               e.type == ValueType::INT32 || e.type == ValueType::INT64)
                                  ? static_cast<double>(e.i)
                                  : static_cast<double>(e.u);
}

int64_t Value::integer_at(uint64_t idx) const {
  Value e;
  int sz = fixed_size(elem_type);
  if (type != ValueType::ARRAY || sz <= 0 || idx >= count) return 0;
  decode_scalar(elem_type, data + idx * static_cast<uint64_t>(sz), e);
  return e.is_float() ? static_cast<int64_t>(e.f) : e.i;
}

std::string TensorInfo::shape_string() const {
  std::string s = "[";
  for (uint32_t d = 0; d < n_dims; ++d) s += (d ? ", " : "") + std::to_string(ne[d]);
  return s + "]";
}

void File::fail_format(const std::string& what) const {
  fail(BRISK_ERR_BAD_FORMAT, "'" + map_.path() + "': " + what);
}

File::File(const std::string& path, const MapOptions& map) : map_(path, map) {
  const uint64_t size = map_.size();
  if (size == 0) fail_format("empty file (0 bytes), not a GGUF model");
  Reader r(*this, map_.data(), size);
  if (size < 4) fail_format("not a GGUF file (only " + std::to_string(size) + " bytes)");
  uint32_t magic = r.read<uint32_t>("magic");
  if (magic != kMagic) fail_format("not a GGUF file (bad magic)");
  version_ = r.read<uint32_t>("version");
  if (version_ != 2 && version_ != 3)
    fail(BRISK_ERR_UNSUPPORTED, "'" + path + "': unsupported GGUF version " + std::to_string(version_) +
                                    " (brisk reads versions 2 and 3)");
  uint64_t n_tensors = r.read<uint64_t>("tensor count");
  uint64_t n_kv = r.read<uint64_t>("metadata count");
  // Each KV needs >= 12 bytes (key length + type), each tensor info >= 28.
  if (n_kv > r.remaining() / 12)
    fail_format("truncated file: header claims " + std::to_string(n_kv) + " metadata entries");
  if (n_tensors > r.remaining() / 28)
    fail_format("truncated file: header claims " + std::to_string(n_tensors) + " tensors");

  kv_.reserve(static_cast<size_t>(n_kv));
  for (uint64_t k = 0; k < n_kv; ++k) {
    std::string_view key = r.read_string("metadata key");
    if (key.size() > kMaxNameLen) fail_format("metadata key longer than 64 KiB");
    std::string skey(key);
    if (kv_index_.count(skey)) fail_format("duplicate metadata key '" + skey + "'");
    uint32_t t = r.read<uint32_t>("metadata value type");
    Value v;
    read_value(r, *this, static_cast<ValueType>(t), v, 0, skey);
    kv_index_.emplace(skey, kv_.size());
    kv_.emplace_back(std::move(skey), std::move(v));
  }

  if (const Value* a = find("general.alignment")) {
    if (!a->is_integer() || a->u == 0 || a->u > (1u << 20) || (a->u & (a->u - 1)) != 0)
      fail_format("general.alignment must be a power of two up to 1 MiB, got " + a->to_string());
    alignment_ = a->u;
  }

  tensors_.resize(static_cast<size_t>(n_tensors));
  for (uint64_t ti = 0; ti < n_tensors; ++ti) {
    TensorInfo& t = tensors_[ti];
    std::string_view name = r.read_string("tensor name");
    if (name.size() > kMaxNameLen) fail_format("tensor name longer than 64 KiB");
    t.name = std::string(name);
    t.n_dims = r.read<uint32_t>("tensor dimension count");
    if (t.n_dims == 0 || t.n_dims > kMaxDims)
      fail_format("tensor '" + t.name + "' has " + std::to_string(t.n_dims) + " dimensions (1 to 4 allowed)");
    uint64_t n_el = 1;
    for (uint32_t d = 0; d < t.n_dims; ++d) {
      uint64_t ne = r.read<uint64_t>("tensor dimension");
      if (ne == 0 || ne > (uint64_t(1) << 40) || mul_overflows(n_el, ne, &n_el) || n_el > (uint64_t(1) << 48))
        fail_format("tensor '" + t.name + "' has an impossible shape");
      t.ne[d] = static_cast<int64_t>(ne);
    }
    uint32_t type = r.read<uint32_t>("tensor type");
    const TypeTraits& tr = type_traits(type);
    if (!tr.known) fail_format("tensor '" + t.name + "' has unknown tensor type " + std::to_string(type));
    t.type = static_cast<TensorType>(type);
    if (t.ne[0] % tr.block_size != 0)
      fail_format("tensor '" + t.name + "' (" + tr.name + ") has row length " + std::to_string(t.ne[0]) +
                  ", not a multiple of its block size " + std::to_string(tr.block_size));
    t.n_bytes = (n_el / tr.block_size) * tr.type_size;
    t.offset = r.read<uint64_t>("tensor offset");
    if (t.offset % alignment_ != 0)
      fail_format("tensor '" + t.name + "' data offset " + std::to_string(t.offset) + " is not aligned to " +
                  std::to_string(alignment_));
    if (tensor_index_.count(t.name)) fail_format("duplicate tensor name '" + t.name + "'");
    tensor_index_.emplace(t.name, ti);
  }
  header_end_ = r.pos();

  data_offset_ = (header_end_ + alignment_ - 1) / alignment_ * alignment_;
  if (n_tensors > 0 && data_offset_ > size)
    fail_format("truncated file: tensor data section starts at " + std::to_string(data_offset_) +
                " but the file has " + std::to_string(size) + " bytes");
  for (TensorInfo& t : tensors_) {
    uint64_t begin, end;
    if (add_overflows(data_offset_, t.offset, &begin) || add_overflows(begin, t.n_bytes, &end) || end > size)
      fail_format("tensor '" + t.name + "' data [" + std::to_string(t.offset) + ", +" + std::to_string(t.n_bytes) +
                  ") lies outside the file (truncated or corrupt)");
    t.data = map_.data() + begin;
  }
}

const Value* File::find(std::string_view key) const {
  auto it = kv_index_.find(std::string(key));
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

const TensorInfo* File::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {
[[noreturn]] void mistyped(const File& f, std::string_view key, const Value& v, const char* want) {
  f.fail_format("metadata key '" + std::string(key) + "' has type " + value_type_name(v.type) + ", expected " +
                want);
}
[[noreturn]] void missing(const File& f, std::string_view key) {
  f.fail_format("required metadata key '" + std::string(key) + "' is missing");
}
}  // namespace

std::optional<std::string> File::opt_string(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != ValueType::STRING) mistyped(*this, key, *v, "string");
  return std::string(v->str);
}

std::string File::get_string(std::string_view key) const {
  auto s = opt_string(key);
  if (!s) missing(*this, key);
  return *s;
}

std::optional<uint64_t> File::opt_uint(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_integer()) mistyped(*this, key, *v, "an integer");
  if (v->i < 0 && v->type != ValueType::UINT64) mistyped(*this, key, *v, "a non-negative integer");
  return v->u;
}

uint64_t File::get_uint(std::string_view key) const {
  auto u = opt_uint(key);
  if (!u) missing(*this, key);
  return *u;
}

std::optional<double> File::opt_float(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (v->is_float()) return v->f;
  if (v->is_integer()) return static_cast<double>(v->i);
  mistyped(*this, key, *v, "a number");
}

std::optional<bool> File::opt_bool(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != ValueType::BOOL) mistyped(*this, key, *v, "bool");
  return v->u != 0;
}

const Value* File::opt_array(std::string_view key, ValueType elem) const {
  const Value* v = find(key);
  if (!v) return nullptr;
  if (v->type != ValueType::ARRAY) mistyped(*this, key, *v, "array");
  if (v->elem_type != elem)
    fail_format("metadata key '" + std::string(key) + "' is an array of " + value_type_name(v->elem_type) +
                ", expected " + value_type_name(elem));
  return v;
}

const Value& File::get_array(std::string_view key, ValueType elem) const {
  const Value* v = opt_array(key, elem);
  if (!v) missing(*this, key);
  return *v;
}

}  // namespace brisk::gguf
