// SPDX-License-Identifier: MIT
// GGUF reader: real files parse; every kind of damage gives a clean error.
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <iterator>

#include "core/error.h"
#include "gguf/gguf.h"
#include "gguf/writer.h"
#include "test_data.h"

using namespace brisk;

namespace {


// Opening must fail with BRISK_ERR_BAD_FORMAT (or the given code) and a message containing `needle`.
void expect_error(const std::string& path, const std::string& needle, brisk_status code = BRISK_ERR_BAD_FORMAT) {
  try {
    gguf::File f(path);
    FAIL("opened a damaged file: " << path);
  } catch (const Error& e) {
    INFO("message: " << e.what());
    CHECK(e.code() == code);
    CHECK(std::string(e.what()).find(needle) != std::string::npos);
  }
}

std::string small_file() {
  gguf::Writer w;
  w.add_string("general.architecture", "llama");
  w.add_u32("some.u32", 7);
  w.add_f32("some.f32", 0.5f);
  w.add_bool("some.bool", true);
  w.add_strings("some.strings", {"a", "bc", ""});
  w.add_i32s("some.ints", {1, -2, 3});
  w.add_tensor("t0", TensorType::F32, {4, 2});
  w.add_tensor("t1", TensorType::Q8_0, {32});
  std::string path = (test::scratch_dir() / "small.gguf").string();
  w.write(path, [&](size_t i, const gguf::Writer::Sink& sink) {
    std::string bytes(w.tensor_bytes(i), static_cast<char>(i + 1));
    sink(bytes.data(), bytes.size());
  });
  return path;
}

}  // namespace

TEST_CASE("gguf: reads stories260K", "[gguf]") {
  BRISK_TEST_FILE(path, "models/stories260K.gguf");
  gguf::File f(path);
  CHECK(f.version() == 3);
  CHECK(f.tensors().size() == 48);
  CHECK(f.get_string("general.architecture") == "llama");
  CHECK(f.get_uint("llama.embedding_length") == 64);
  CHECK(f.get_array("tokenizer.ggml.tokens", gguf::ValueType::STRING).items.size() == 512);
  const gguf::TensorInfo* t = f.find_tensor("token_embd.weight");
  REQUIRE(t);
  CHECK(t->ne[0] == 64);
  CHECK(t->ne[1] == 512);
  CHECK(t->n_bytes == 64 * 512 * 4);
}

TEST_CASE("gguf: writer output reads back", "[gguf]") {
  gguf::File f(small_file());
  CHECK(f.get_uint("some.u32") == 7);
  CHECK(*f.opt_float("some.f32") == 0.5);
  CHECK(*f.opt_bool("some.bool"));
  const gguf::Value& s = f.get_array("some.strings", gguf::ValueType::STRING);
  REQUIRE(s.items.size() == 3);
  CHECK(s.items[1].str == "bc");
  CHECK(f.get_array("some.ints", gguf::ValueType::INT32).integer_at(1) == -2);
  REQUIRE(f.tensors().size() == 2);
  CHECK(f.tensors()[1].n_bytes == 34);
  CHECK(f.tensors()[1].data[0] == 2);
  CHECK(f.tensors()[1].offset % 32 == 0);
}

TEST_CASE("gguf: typed accessors report missing and mistyped keys", "[gguf]") {
  gguf::File f(small_file());
  CHECK_THROWS_WITH(f.get_string("nope"), Catch::Contains("required metadata key 'nope' is missing"));
  CHECK_THROWS_WITH(f.get_string("some.u32"), Catch::Contains("has type uint32, expected string"));
  CHECK_THROWS_WITH(f.get_array("some.ints", gguf::ValueType::FLOAT32), Catch::Contains("array of int32"));
}

TEST_CASE("gguf: damaged files give clear errors", "[gguf]") {
  const std::string good = brisk::test::read_bytes(small_file());
  const std::string dir = test::scratch_dir().string();
  auto variant = [&](const std::string& name, const std::string& bytes) {
    std::string p = dir + "/" + name;
    brisk::test::write_bytes(p, bytes);
    return p;
  };
  SECTION("missing file") { expect_error(dir + "/does-not-exist.gguf", "cannot open", BRISK_ERR_NOT_FOUND); }
  SECTION("directory") { expect_error(dir, "is a directory", BRISK_ERR_INVALID_ARGUMENT); }
  SECTION("zero-length") { expect_error(variant("empty.gguf", ""), "empty file"); }
  SECTION("not gguf") { expect_error(variant("text.gguf", "hello world, not a model"), "not a GGUF file"); }
  SECTION("bad version") {
    std::string b = good;
    b[4] = 9;
    expect_error(variant("v9.gguf", b), "unsupported GGUF version 9", BRISK_ERR_UNSUPPORTED);
  }
  SECTION("every truncation") {
    for (size_t n = 1; n < good.size(); n += (n < 200 ? 1 : 37)) {
      std::string p = variant("trunc.gguf", good.substr(0, n));
      try {
        gguf::File f(p);
        FAIL("truncated to " << n << " bytes opened");
      } catch (const Error& e) {
        CHECK(e.code() == BRISK_ERR_BAD_FORMAT);
      }
    }
  }
  SECTION("huge counts") {
    std::string b = good;
    b[8 + 7] = 0x7f;  // tensor count high byte
    expect_error(variant("count.gguf", b), "claims");
    b = good;
    b[16 + 6] = 0x10;  // metadata count
    expect_error(variant("kvcount.gguf", b), "claims");
  }
  SECTION("flipped string length") {
    std::string b = good;
    b[24 + 7] = 0x40;  // first key's length
    expect_error(variant("keylen.gguf", b), "truncated file");
  }
  SECTION("tensor offset past the end") {
    gguf::File f(small_file());
    // The last tensor info ends with its u64 offset, right before header_end.
    std::string b = good;
    uint64_t off = 1ull << 40;
    b.replace(f.header_end() - 8, 8, reinterpret_cast<const char*>(&off), 8);
    expect_error(variant("offset.gguf", b), "lies outside the file");
  }
  SECTION("unknown tensor type") {
    gguf::File f(small_file());
    std::string b = good;
    uint32_t bad = 77;
    b.replace(f.header_end() - 12, 4, reinterpret_cast<const char*>(&bad), 4);
    expect_error(variant("type.gguf", b), "unknown tensor type 77");
  }
}

TEST_CASE("gguf: duplicate tensor names are refused", "[gguf]") {
  gguf::Writer w;
  w.add_tensor("a", TensorType::F32, {4});
  w.add_tensor("b", TensorType::F32, {4});
  std::string path = (test::scratch_dir() / "dup.gguf").string();
  w.write(path, [](size_t, const gguf::Writer::Sink& s) {
    float z[4] = {};
    s(z, sizeof z);
  });
  std::string b = brisk::test::read_bytes(path);
  size_t at = b.rfind(std::string("\x01\x00\x00\x00\x00\x00\x00\x00" "b", 9));
  REQUIRE(at != std::string::npos);
  b[at + 8] = 'a';
  brisk::test::write_bytes(path, b);
  expect_error(path, "duplicate tensor name 'a'");
}

TEST_CASE("gguf: writer leaves no file behind on failure", "[gguf]") {
  gguf::Writer w;
  w.add_tensor("a", TensorType::F32, {4});
  std::string path = (test::scratch_dir() / "fail.gguf").string();
  std::remove(path.c_str());
  CHECK_THROWS(w.write(path, [](size_t, const gguf::Writer::Sink& s) { s("xx", 2); }));
  CHECK_FALSE(std::filesystem::exists(path));
  CHECK_FALSE(std::filesystem::exists(path + ".tmp." + std::to_string(::getpid())));
}
