// SPDX-License-Identifier: MIT
// An output matrix tied to the token embeddings (Qwen2.5, Gemma) is packed
// like every other matrix when the file is a plain mapping: decode streams
// it every step, while the embedding lookups keep reading its rows in the
// file, whose released pages read back from the page cache. A copy read
// into memory (or locked) keeps it in rows, since released anonymous memory
// would read back as zeros. Either way the model computes the same logits.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "brisk/brisk.h"
#include "model/kernel_plan.h"
#include "model/model.h"
#include "model/synthetic.h"
#include "test_data.h"

using namespace brisk;

namespace {

const std::string& tied_model() {
  static const std::string path = [] {
    SyntheticShape s = find_synthetic_shape("tiny");
    s.name = "tiny-tied";
    s.tied_embeddings = true;
    const std::string p = (test::scratch_dir() / "tiny-tied-q4_0.gguf").string();
    write_synthetic_model(s, TensorType::Q4_0, 11, p, 1);
    return p;
  }();
  return path;
}

// Logits after each of a few tokens, through the C API.
std::vector<float> logits_of(int64_t no_mmap) {
  brisk_model_options mo;
  brisk_model_options_init(&mo);
  mo.no_mmap = no_mmap;
  mo.plan_mode = BRISK_PLAN_FIXED;
  brisk_model* m = nullptr;
  REQUIRE(brisk_model_open(tied_model().c_str(), &mo, &m) == BRISK_OK);
  brisk_session_options so;
  brisk_session_options_init(&so);
  so.n_ctx = 64;
  so.n_threads = 2;
  brisk_session* s = nullptr;
  REQUIRE(brisk_session_create(m, &so, &s) == BRISK_OK);
  // Token ids spread over the vocabulary, so lookups land on many pages.
  const std::vector<int32_t> toks = {1, 2047, 900, 5, 1500, 33, 2000, 700};
  std::vector<float> out(toks.size() * static_cast<size_t>(brisk_model_n_vocab(m)));
  size_t needed = 0;
  REQUIRE(brisk_session_eval_all(s, toks.data(), toks.size(), out.data(), out.size(), &needed) == BRISK_OK);
  brisk_session_free(s);
  brisk_model_close(m);
  return out;
}

}  // namespace

TEST_CASE("a tied output is packed on a plain mapping and stays in rows on a copy read into memory", "[packed][tied]") {
  ModelOpenOptions o = reproducible_load();
  auto mapped = Model::open(tied_model(), o);
  const Weights& w = mapped->weights();
  REQUIRE(w.tied_output);
  // Packed wherever the fixed plan packs the type (not with BRISK_ISA=scalar
  // or BRISK_REPACK=0).
  const bool packs = default_type_plan(w.output.type).packed;
  CHECK(w.output.packed == packs);
  if (packs) {
    CHECK(w.output.data != w.token_embd.data);
    CHECK(w.output.file_data == w.token_embd.data);
  } else {
    CHECK(w.output.data == w.token_embd.data);
  }

  o.map.read_into_memory = true;
  auto copied = Model::open(tied_model(), o);
  CHECK_FALSE(copied->weights().output.packed);
  CHECK(copied->weights().output.data == copied->weights().token_embd.data);
}

TEST_CASE("a packed tied output gives the logits of the row-major one, embeddings read after its pages were released",
          "[packed][tied]") {
  const std::vector<float> packed = logits_of(0), rows = logits_of(1);
  REQUIRE(packed.size() == rows.size());
  REQUIRE(!packed.empty());
  double max_diff = 0, max_abs = 0;
  for (size_t i = 0; i < packed.size(); ++i) {
    max_diff = std::max(max_diff, std::abs(static_cast<double>(packed[i]) - rows[i]));
    max_abs = std::max(max_abs, std::abs(static_cast<double>(rows[i])));
  }
  INFO("max |diff| " << max_diff << " of max |logit| " << max_abs);
  CHECK(max_abs > 0);
  // The two layouts sum in another order; an embedding read as zeros would
  // change the logits entirely.
  CHECK(max_diff <= 1e-3 * max_abs + 1e-4);
}
