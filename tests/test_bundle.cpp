// SPDX-License-Identifier: MIT
// Checksum manifests and .brisk bundles: every flipped byte is found and
// named; damaged or truncated bundles never leave an output file.
#include <catch2/catch.hpp>
#include <sys/wait.h>

#include <cstdlib>
#include <set>

#include "bundle/hash.h"
#include "bundle/manifest.h"
#include "bundle/pack.h"
#include "bundle/verify.h"
#include "convert_util.h"
#include "gguf/gguf.h"

using namespace brisk;
using brisk::test::scratch_dir;

namespace {

struct Verdict {
  brisk_status status;
  std::string error;
  std::set<std::string> where;
};

void collect(void* ud, const char* where, const char*) { static_cast<Verdict*>(ud)->where.insert(where); }

Verdict verify(const std::string& path) {
  Verdict v;
  brisk_verify_options o;
  brisk_verify_options_init(&o);
  o.n_threads = 2;
  o.mismatch_fn = collect;
  o.mismatch_user_data = &v;
  v.status = brisk_verify(path.c_str(), &o, nullptr);
  v.error = brisk_last_error();
  return v;
}

// A converted stories260K (F16, so a bit under 1 MB) to damage.
std::string converted_model() {
  static std::string path;
  if (path.empty()) {
    const std::string dir = test::test_data_root() + "/models/stories260K-hf-f16";
    path = test::convert_hf_to(dir, "bundle-src.gguf");
  }
  return path;
}

bool no_files_like(const std::string& path) {
  namespace fs = std::filesystem;
  for (const auto& e : fs::directory_iterator(fs::path(path).parent_path()))
    if (e.path().filename().string().rfind(fs::path(path).filename().string(), 0) == 0) return false;
  return true;
}

brisk_pack_options pack_options() {
  brisk_pack_options o;
  brisk_pack_options_init(&o);
  o.n_threads = 2;
  return o;
}

}  // namespace

TEST_CASE("manifest: converted and synthetic models verify, a model without one says so", "[bundle]") {
  BRISK_TEST_FILE(dir, "models/stories260K-hf-f16");
  BRISK_TEST_FILE(plain, "models/stories260K.gguf");
  Verdict ok = verify(converted_model());
  INFO(ok.error);
  CHECK(ok.status == BRISK_OK);
  CHECK(ok.where.empty());

  brisk_synthesize_options so;
  brisk_synthesize_options_init(&so);
  so.n_threads = 2;
  const std::string synth = (scratch_dir() / "synth.gguf").string();
  REQUIRE(brisk_synthesize_model(synth.c_str(), &so) == BRISK_OK);
  CHECK(verify(synth).status == BRISK_OK);
  {
    gguf::File f(synth);
    auto m = bundle::read_manifest(f);
    REQUIRE(m);
    CHECK(m->tool.find("synth") != std::string::npos);
    CHECK(m->tensor_hashes.size() == f.tensors().size());
  }

  Verdict none = verify(plain);
  CHECK(none.status == BRISK_ERR_NOT_FOUND);
  CHECK(none.error.find("no brisk checksum manifest") != std::string::npos);
}

TEST_CASE("manifest: flipping any sampled byte makes verify fail and name the place", "[bundle]") {
  BRISK_TEST_FILE(dir, "models/stories260K-hf-f16");
  const std::string good = test::read_bytes(converted_model());
  gguf::File f(converted_model());
  const std::string path = (scratch_dir() / "flipped.gguf").string();
  auto flip_and_verify = [&](uint64_t pos) {
    std::string b = good;
    b[pos] = static_cast<char>(b[pos] ^ 0x10);
    test::write_bytes(path, b);
    return verify(path);
  };
  // Header and metadata: every 53rd byte (key names, lengths, types,
  // values, tokens, the manifest itself, tensor infos).
  int header_checks = 0;
  for (uint64_t pos = 0; pos < f.header_end(); pos += 53) {
    INFO("header byte " << pos);
    Verdict v = flip_and_verify(pos);
    CHECK(v.status != BRISK_OK);
    // Still a GGUF with a manifest: the metadata hash catches it (or the
    // manifest itself is damaged); otherwise opening fails with its reason.
    if (v.status == BRISK_ERR_CHECKSUM) CHECK((v.where.count("metadata") || v.where.count("manifest")));
    ++header_checks;
  }
  CHECK(header_checks > 100);
  // Tensor data: first, middle and last byte of several tensors, each
  // naming exactly that tensor.
  for (const char* name : {"token_embd.weight", "blk.0.attn_q.weight", "blk.2.ffn_down.weight",
                           "blk.4.attn_norm.weight", "output_norm.weight"}) {
    const gguf::TensorInfo* t = f.find_tensor(name);
    REQUIRE(t);
    for (uint64_t at : {uint64_t(0), t->n_bytes / 2, t->n_bytes - 1}) {
      INFO(name << " byte " << at);
      Verdict v = flip_and_verify(f.data_offset() + t->offset + at);
      CHECK(v.status == BRISK_ERR_CHECKSUM);
      CHECK(v.where == std::set<std::string>{"tensor '" + std::string(name) + "'"});
      CHECK(v.error.find(name) != std::string::npos);
    }
  }
  // Alignment padding between the header and the first tensor.
  if (f.data_offset() > f.header_end()) {
    Verdict v = flip_and_verify(f.header_end());
    CHECK(v.status == BRISK_ERR_CHECKSUM);
    CHECK(v.where == std::set<std::string>{"padding"});
  }
}

TEST_CASE("manifest: brisk_model_open with verify reports a damaged tensor by name", "[bundle]") {
  BRISK_TEST_FILE(dir, "models/stories260K-hf-f16");
  BRISK_TEST_FILE(plain, "models/stories260K.gguf");
  brisk_model_options mo;
  brisk_model_options_init(&mo);
  mo.verify = 1;
  brisk_model* m = nullptr;
  CHECK(brisk_model_open(converted_model().c_str(), &mo, &m) == BRISK_OK);
  brisk_model_close(m);
  m = nullptr;

  gguf::File f(converted_model());
  const gguf::TensorInfo* t = f.find_tensor("blk.1.ffn_up.weight");
  std::string b = test::read_bytes(converted_model());
  b[f.data_offset() + t->offset + 100] ^= 1;
  const std::string bad = (scratch_dir() / "bad-open.gguf").string();
  test::write_bytes(bad, b);
  CHECK(brisk_model_open(bad.c_str(), &mo, &m) == BRISK_ERR_CHECKSUM);
  CHECK(m == nullptr);
  CHECK(std::string(brisk_last_error()).find("blk.1.ffn_up.weight") != std::string::npos);
  mo.verify = 0;  // without verification the damage goes unnoticed
  CHECK(brisk_model_open(bad.c_str(), &mo, &m) == BRISK_OK);
  brisk_model_close(m);
  mo.verify = 1;
  m = nullptr;
  CHECK(brisk_model_open(plain.c_str(), &mo, &m) == BRISK_ERR_NOT_FOUND);
}

TEST_CASE("manifest: add-manifest gives a plain GGUF one, keeping every tensor", "[bundle]") {
  BRISK_TEST_FILE(plain, "models/stories260K.gguf");
  const std::string out = (scratch_dir() / "with-manifest.gguf").string();
  brisk_verify_options o;
  brisk_verify_options_init(&o);
  REQUIRE(brisk_add_manifest(plain.c_str(), out.c_str(), &o) == BRISK_OK);
  CHECK(verify(out).status == BRISK_OK);
  gguf::File a(plain), b(out);
  REQUIRE(a.tensors().size() == b.tensors().size());
  for (size_t i = 0; i < a.tensors().size(); ++i) {
    CHECK(a.tensors()[i].name == b.tensors()[i].name);
    CHECK(std::memcmp(a.tensors()[i].data, b.tensors()[i].data, a.tensors()[i].n_bytes) == 0);
  }
  CHECK(a.metadata().size() + 6 == b.metadata().size());
  auto m = bundle::read_manifest(b);
  REQUIRE(m);
  CHECK(m->source_hash == bundle::hash_bytes(a.file_data(), a.file_size()));
  // In place, on a copy; a damaged file is refused rather than re-hashed.
  std::string bytes = test::read_bytes(out);
  bytes[b.data_offset() + 5] ^= 1;
  test::write_bytes(out, bytes);
  CHECK(brisk_add_manifest(out.c_str(), nullptr, &o) == BRISK_ERR_CHECKSUM);
}

TEST_CASE("bundle: pack and unpack round-trip byte for byte, verify reads bundles", "[bundle]") {
  BRISK_TEST_FILE(dir, "models/stories260K-hf-f16");
  const std::string bundle_path = (scratch_dir() / "model.brisk").string();
  const std::string out = (scratch_dir() / "unpacked.gguf").string();
  brisk_pack_options o = pack_options();
  o.level = 9;
  REQUIRE(brisk_pack(converted_model().c_str(), bundle_path.c_str(), &o) == BRISK_OK);
  CHECK(test::read_bytes(bundle_path).size() < test::read_bytes(converted_model()).size());
  CHECK(verify(bundle_path).status == BRISK_OK);
  REQUIRE(brisk_unpack(bundle_path.c_str(), out.c_str(), &o) == BRISK_OK);
  CHECK(test::read_bytes(out) == test::read_bytes(converted_model()));
  // A plain GGUF packs too (with bundle checksums only).
  BRISK_TEST_FILE(plain, "models/stories260K.gguf");
  o.long_distance = 1;
  REQUIRE(brisk_pack(plain.c_str(), bundle_path.c_str(), &o) == BRISK_OK);
  REQUIRE(brisk_unpack(bundle_path.c_str(), out.c_str(), &o) == BRISK_OK);
  CHECK(test::read_bytes(out) == test::read_bytes(plain));
}

TEST_CASE("bundle: truncated or damaged bundles fail unpack and leave no file", "[bundle]") {
  BRISK_TEST_FILE(dir, "models/stories260K-hf-f16");
  const std::string bundle_path = (scratch_dir() / "good.brisk").string();
  brisk_pack_options o = pack_options();
  REQUIRE(brisk_pack(converted_model().c_str(), bundle_path.c_str(), &o) == BRISK_OK);
  const std::string good = test::read_bytes(bundle_path);
  const std::string damaged = (scratch_dir() / "damaged.brisk").string();
  const std::string out = (scratch_dir() / "never.gguf").string();
  auto unpack = [&](const std::string& bytes) {
    test::write_bytes(damaged, bytes);
    const brisk_status st = brisk_unpack(damaged.c_str(), out.c_str(), &o);
    CHECK(no_files_like(out));
    return st;
  };
  for (size_t len : {size_t(0), size_t(7), size_t(30), size_t(200), good.size() / 2, good.size() - 1}) {
    INFO("truncated to " << len);
    const brisk_status st = unpack(good.substr(0, len));
    CHECK((st == BRISK_ERR_BAD_FORMAT || st == BRISK_ERR_CHECKSUM));
    CHECK(std::string(brisk_last_error()).find(len < 40 ? "truncated" : "") != std::string::npos);
  }
  CHECK(unpack(good + "x") == BRISK_ERR_BAD_FORMAT);  // trailing garbage
  for (size_t pos : {size_t(3), size_t(10), size_t(20), size_t(60), good.size() / 3, good.size() - 5}) {
    INFO("flipped byte " << pos);
    std::string b = good;
    b[pos] ^= 0x40;
    const brisk_status st = unpack(b);
    CHECK(st != BRISK_OK);
  }
  // And a good unpack over a path that exists replaces it only when complete.
  CHECK(brisk_unpack(bundle_path.c_str(), out.c_str(), &o) == BRISK_OK);
}

TEST_CASE("bundle: a segment that does not match is named by verify and stops unpack", "[bundle]") {
  BRISK_TEST_FILE(dir, "models/stories260K-hf-f16");
  const std::string bundle_path = (scratch_dir() / "seg.brisk").string();
  brisk_pack_options o = pack_options();
  REQUIRE(brisk_pack(converted_model().c_str(), bundle_path.c_str(), &o) == BRISK_OK);
  std::string b = test::read_bytes(bundle_path);
  // Rewrite the manifest with one wrong tensor hash and a valid frame
  // checksum: the stream itself is intact, so only the segment check can
  // catch it.
  uint64_t msize;
  std::memcpy(&msize, b.data() + 16, 8);
  bundle::BundleManifest m = bundle::BundleManifest::from_json(b.substr(40, msize));
  auto it = std::find_if(m.segments.begin(), m.segments.end(),
                         [](const bundle::Segment& s) { return s.name == "tensor 'blk.3.attn_v.weight'"; });
  REQUIRE(it != m.segments.end());
  it->hash.bytes[0] ^= 1;
  const std::string json = m.to_json();
  REQUIRE(json.size() == msize);
  b.replace(40, msize, json);
  const bundle::Hash128 h = bundle::hash_bytes(json.data(), json.size());
  b.replace(24, 16, reinterpret_cast<const char*>(h.bytes), 16);
  const std::string bad = (scratch_dir() / "seg-bad.brisk").string();
  test::write_bytes(bad, b);
  Verdict v = verify(bad);
  CHECK(v.status == BRISK_ERR_CHECKSUM);
  CHECK(v.where == std::set<std::string>{"tensor 'blk.3.attn_v.weight'"});
  const std::string out = (scratch_dir() / "seg-out.gguf").string();
  CHECK(brisk_unpack(bad.c_str(), out.c_str(), &o) == BRISK_ERR_CHECKSUM);
  CHECK(std::string(brisk_last_error()).find("blk.3.attn_v.weight") != std::string::npos);
  CHECK(no_files_like(out));
}

TEST_CASE("bundle: pack refuses a damaged model", "[bundle]") {
  BRISK_TEST_FILE(dir, "models/stories260K-hf-f16");
  gguf::File f(converted_model());
  std::string b = test::read_bytes(converted_model());
  b[f.data_offset() + 7] ^= 1;
  const std::string bad = (scratch_dir() / "pack-bad.gguf").string(), out = (scratch_dir() / "pack-bad.brisk").string();
  test::write_bytes(bad, b);
  brisk_pack_options o = pack_options();
  CHECK(brisk_pack(bad.c_str(), out.c_str(), &o) == BRISK_ERR_CHECKSUM);
  CHECK(no_files_like(out));
}

TEST_CASE("bundle: hostile manifests are refused with a reason", "[bundle]") {
  const std::string h = std::string(32, 'a');
  auto seg = [&](uint64_t off, uint64_t size) {
    return "{\"name\":\"s\",\"offset\":" + std::to_string(off) + ",\"size\":" + std::to_string(size) +
           ",\"xxh3_128\":\"" + h + "\"}";
  };
  auto doc = [&](const std::string& size, const std::string& segs) {
    return "{\"format\":\"brisk-bundle\",\"version\":1,\"tool\":\"t\",\"gguf_size\":" + size +
           ",\"gguf_manifest\":false,\"segments\":[" + segs + "]}";
  };
  CHECK_NOTHROW(bundle::BundleManifest::from_json(doc("10", seg(0, 4) + "," + seg(4, 6))));
  const std::pair<std::string, const char*> bad[] = {
      {"", "not valid JSON"},
      {"[1,2]", "not a JSON object"},
      {doc("10", seg(0, 4) + "," + seg(5, 5)), "starts at 5, expected 4"},   // gap
      {doc("10", seg(0, 6) + "," + seg(4, 6)), "starts at 4, expected 6"},   // overlap
      {doc("10", seg(0, 4)), "cover 4 of 10"},
      {doc("10", seg(0, 11)), "out of range"},
      {doc("18446744073709551615", seg(0, 4)), "out of range"},
      {doc("10", seg(0, 0)), "out of range"},
      {doc("-3", seg(0, 4)), "wrong type"},
      {doc("10", "{\"name\":\"s\",\"offset\":0,\"size\":10,\"xxh3_128\":\"XYZ\"}"), "hex"},
      {doc("10", "7"), "not an object"},
  };
  for (const auto& [text, needle] : bad) {
    INFO(text);
    try {
      bundle::BundleManifest::from_json(text);
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(e.code() == BRISK_ERR_BAD_FORMAT);
      CHECK(std::string(e.what()).find(needle) != std::string::npos);
    }
  }
}

TEST_CASE("bundle: long-distance matching turns on where a tensor is stored twice, and pays", "[bundle]") {
  // Random tensors A (4 MiB), B (2 MiB) and C = A: C repeats A 6 MiB back,
  // beyond zstd level 3's 2 MiB window.
  std::vector<uint32_t> a(1 << 20), b(1 << 19);
  uint64_t x = 12345;
  for (auto* v : {&a, &b})
    for (uint32_t& w : *v) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      w = static_cast<uint32_t>(x >> 32);
    }
  gguf::Writer w;
  w.add_string("general.architecture", "test");
  w.add_tensor("a", TensorType::F32, {int64_t(a.size())});
  w.add_tensor("b", TensorType::F32, {int64_t(b.size())});
  w.add_tensor("c", TensorType::F32, {int64_t(a.size())});
  const std::string model = (scratch_dir() / "dup.gguf").string();
  bundle::write_with_manifest(w, model, [&](size_t i, const gguf::Writer::Sink& sink) {
    const auto& v = i == 1 ? b : a;
    sink(v.data(), v.size() * 4);
  }, "test", nullptr);
  auto pack = [&](int32_t long_distance) {
    const std::string out = (scratch_dir() / "dup.brisk").string();
    brisk_pack_options o = pack_options();
    o.long_distance = long_distance;
    REQUIRE(brisk_pack(model.c_str(), out.c_str(), &o) == BRISK_OK);
    const std::string bytes = test::read_bytes(out);
    uint64_t msize;
    std::memcpy(&msize, bytes.data() + 16, 8);
    return std::make_pair(bundle::BundleManifest::from_json(bytes.substr(40, msize)).long_distance, bytes.size());
  };
  const auto [on, small] = pack(-1);
  const auto [off, large] = pack(0);
  CHECK(on);
  CHECK_FALSE(off);
  const double model_size = static_cast<double>(test::read_bytes(model).size());
  CHECK(small < 0.65 * model_size);
  CHECK(large > 0.95 * model_size);
  // Without a repeat, auto leaves it off.
  BRISK_TEST_FILE(dir, "models/stories260K-hf-f16");
  brisk_pack_options o = pack_options();
  const std::string out = (scratch_dir() / "nodup.brisk").string();
  REQUIRE(brisk_pack(converted_model().c_str(), out.c_str(), &o) == BRISK_OK);
  const std::string bytes = test::read_bytes(out);
  uint64_t msize;
  std::memcpy(&msize, bytes.data() + 16, 8);
  CHECK_FALSE(bundle::BundleManifest::from_json(bytes.substr(40, msize)).long_distance);
}

TEST_CASE("cli: convert, verify, pack and unpack exit codes and output", "[bundle]") {
  const char* bin = std::getenv("BRISK_BIN");
  if (!bin || !*bin) {
    WARN("skipped: BRISK_BIN is not set (ctest sets it)");
    return;
  }
  BRISK_TEST_FILE(model_bin, "models/stories260K.bin");
  BRISK_TEST_FILE(tok, "models/tok512.bin");
  BRISK_TEST_FILE(plain, "models/stories260K.gguf");
  const std::string d = scratch_dir().string(), b = bin;
  auto run = [&](const std::string& args, std::string* out = nullptr) {
    const std::string cmd = b + " " + args + " > " + d + "/cli.out 2> " + d + "/cli.err";
    const int rc = std::system(cmd.c_str());
    if (out) *out = test::read_bytes(d + "/cli.out");
    INFO(cmd << "\nstderr: " << test::read_bytes(d + "/cli.err"));
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  };
  std::string out;
  CHECK(run("convert --from-llama2c " + model_bin + " --tokenizer " + tok + " -o " + d + "/cli.gguf") == 0);
  CHECK(run("verify " + d + "/cli.gguf", &out) == 0);
  CHECK(out == "OK " + d + "/cli.gguf\n");
  CHECK(run("verify " + plain, &out) == 1);
  CHECK(out == "NO MANIFEST " + plain + "\n");
  CHECK(run("pack " + d + "/cli.gguf -o " + d + "/cli.brisk --level 5") == 0);
  CHECK(run("verify " + d + "/cli.brisk", &out) == 0);
  CHECK(run("unpack " + d + "/cli.brisk -o " + d + "/cli2.gguf") == 0);
  CHECK(test::read_bytes(d + "/cli2.gguf") == test::read_bytes(d + "/cli.gguf"));
  std::string bytes = test::read_bytes(d + "/cli.gguf");
  bytes[bytes.size() - 10] ^= 1;  // inside the last tensor, blk.4.ffn_norm.weight
  test::write_bytes(d + "/cli.gguf", bytes);
  CHECK(run("verify " + d + "/cli.gguf", &out) == 1);
  CHECK(out.find("MISMATCH tensor 'blk.4.ffn_norm.weight'") == 0);
  CHECK(run("convert " + d + "/no-such-dir -o " + d + "/x.gguf") == 1);
  CHECK(run("convert") == 2);
}

TEST_CASE("manifest: brisk_quantize writes one, predicted size included, and an input's manifest is replaced", "[bundle]") {
  BRISK_TEST_FILE(dir, "models/stories260K-hf-f16");
  BRISK_TEST_FILE(plain, "models/stories260K.gguf");
  for (const std::string& in : {plain, converted_model()}) {
    INFO(in);
    const std::string out = (scratch_dir() / "quantized.gguf").string();
    brisk_quantize_options o;
    brisk_quantize_options_init(&o);
    o.type = "q8_0";
    o.n_threads = 2;
    REQUIRE(brisk_quantize(in.c_str(), out.c_str(), &o) == BRISK_OK);
    CHECK(verify(out).status == BRISK_OK);
    gguf::File f(out), src(in);
    auto m = bundle::read_manifest(f);
    REQUIRE(m);
    CHECK(m->tool.find("quantize") != std::string::npos);
    CHECK(m->source_hash == bundle::hash_bytes(src.file_data(), src.file_size()));
  }
}
