// SPDX-License-Identifier: MIT
// Vector kernels (attention, SwiGLU, rmsnorm, ...): every ISA the machine runs agrees with the reference.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/ops.h"
#include "kernels/vec.h"
#include "quant/quant.h"

using namespace brisk;
using namespace brisk::kernels;

TEST_CASE("vec kernels match the scalar reference on every ISA", "[vec]") {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0, 1);
  const VecKernels& ref = *ref_vec_kernels();
  for (Isa isa : {Isa::avx2, Isa::avx512}) {
    const VecKernels* k = vec_kernels_for(isa);
    if (!k) {
      WARN("skipped: this CPU cannot run " << isa_name(isa));
      continue;
    }
    for (int n : {32, 64, 96, 128, 160}) {
      std::vector<float> a(n), b(n), y1(n), y2(n);
      for (int i = 0; i < n; ++i) a[i] = nd(rng), b[i] = nd(rng), y1[i] = y2[i] = nd(rng);
      INFO(isa_name(isa) << " n=" << n);
      CHECK(k->dot(a.data(), b.data(), n) == Approx(ref.dot(a.data(), b.data(), n)).epsilon(1e-5).margin(1e-5));
      k->axpy(y1.data(), 0.37f, a.data(), n);
      ref.axpy(y2.data(), 0.37f, a.data(), n);
      for (int i = 0; i < n; ++i) CHECK(y1[i] == Approx(y2[i]).epsilon(1e-6).margin(1e-6));
      for (TensorType t : {TensorType::F32, TensorType::F16, TensorType::Q8_0, TensorType::Q4_0}) {
        std::vector<uint8_t> row(row_bytes(t, n));
        quant::quantize_row(t, a.data(), row.data(), n);
        std::vector<float> x1(n), x2(n);
        k->to_f32(t, row.data(), x1.data(), n);
        ref.to_f32(t, row.data(), x2.data(), n);
        INFO("type " << type_name(t));
        CHECK(x1 == x2);
        // The cache's writes: bytes identical to the reference, including
        // values that overflow F16, its subnormals, zeros and odd tails.
        std::vector<float> w(a);
        w[0] = 70000.0f, w[1] = -1e-6f, w[2] = 3e-8f, w[3] = -0.0f, w[4] = 65519.0f, w[5] = 65520.0f;
        std::vector<uint8_t> r1(row_bytes(t, n), 0xAA), r2(row_bytes(t, n), 0x55);
        k->from_f32(t, w.data(), r1.data(), n);
        quant::quantize_row(t, w.data(), r2.data(), n);
        CHECK(r1 == r2);
        if (t == TensorType::F16) {
          std::vector<uint8_t> t1(2 * (n - 3), 0xAA), t2(2 * (n - 3), 0x55);
          k->from_f32(t, w.data() + 1, t1.data(), n - 3);
          quant::quantize_row(t, w.data() + 1, t2.data(), n - 3);
          CHECK(t1 == t2);
        }
      }
    }
  }
}

TEST_CASE("fused attention matches the reference on every ISA", "[vec][attend]") {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0, 1);
  const VecKernels& ref = *ref_vec_kernels();
  int fused = 0;
  for (Isa isa : {Isa::avx2, Isa::avx512}) {
    const VecKernels* k = vec_kernels_for(isa);
    if (!k) {
      WARN("skipped: this CPU cannot run " << isa_name(isa));
      continue;
    }
    for (int hd : {64, 128, 32}) {
      // 1, 2, 4, 8, 16 divide a vector; 3, 5, 6, 7 and 9 have their scores
      // padded to 4, 8 or 16 (Qwen2.5 models have groups of 6 and 7); above
      // 16 nothing is padded and the last 8 heads' stores are masked. The
      // scores take heads 8 at a time, every remainder 1..7 a loop of its own.
      for (int group : {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 20}) {
        for (int n_pos : {1, 2, 3, 17, 300}) {
          for (TensorType kt : {TensorType::F16, TensorType::F32, TensorType::Q8_0, TensorType::Q4_0}) {
            const TensorType vt = kt == TensorType::F32 ? TensorType::F16 : kt;
            // Rows of 2 KV heads, this head second, so strides and offsets matter.
            const size_t kstride = row_bytes(kt, 2 * hd), vstride = row_bytes(vt, 2 * hd);
            std::vector<uint8_t> kc(kstride * n_pos), vc(vstride * n_pos);
            std::vector<float> tmp(2 * hd);
            for (int p = 0; p < n_pos; ++p) {
              for (float& x : tmp) x = nd(rng) * 2;
              quant::quantize_row(kt, tmp.data(), kc.data() + p * kstride, 2 * hd);
              for (float& x : tmp) x = nd(rng);
              quant::quantize_row(vt, tmp.data(), vc.data() + p * vstride, 2 * hd);
            }
            // The fused kernel's scratch as sized for it, then guard values
            // that it must leave alone.
            const size_t n_scores = attend_scores_floats(group, n_pos);
            std::vector<float> q(group * hd), s1(n_scores + 16, 12345.0f), s2(group * n_pos), row(hd),
                o1(group * hd, 9),
                o2(group * hd, 7), vrows(n_pos * hd);
            for (float& x : q) x = nd(rng);
            // With and without the value-row scratch, alternating.
            float* vr = (n_pos + group) % 2 ? vrows.data() : nullptr;
            AttendArgs a{q.data(), group, hd, n_pos, 0.125f, kc.data() + row_bytes(kt, hd), kstride, kt,
                         vc.data() + row_bytes(vt, hd), vstride, vt, s1.data(), row.data(), vr, o1.data()};
            AttendArgs b = a;
            b.scores = s2.data();
            b.out = o2.data();
            if (k->attend && k->attend(a)) {
              ++fused;
            } else {
              attend(*k, a);
            }
            attend_reference(ref, b);
            INFO(isa_name(isa) << " hd=" << hd << " group=" << group << " n_pos=" << n_pos << " k=" << type_name(kt));
            for (int i = 0; i < group * hd; ++i) REQUIRE(o1[i] == Approx(o2[i]).epsilon(1e-4).margin(1e-5));
            for (size_t i = n_scores; i < s1.size(); ++i) REQUIRE(s1[i] == 12345.0f);
          }
        }
      }
    }
  }
  if (vec_kernels_for(Isa::avx512)) REQUIRE(fused > 0);
}

TEST_CASE("swiglu matches the reference on every ISA", "[vec]") {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0, 4);
  const VecKernels& ref = *ref_vec_kernels();
  for (Isa isa : {Isa::avx2, Isa::avx512}) {
    const VecKernels* k = vec_kernels_for(isa);
    if (!k) continue;
    for (int n : {1, 15, 16, 17, 100, 5632}) {
      std::vector<float> g(n), u(n);
      for (int i = 0; i < n; ++i) g[i] = nd(rng), u[i] = nd(rng);
      if (n == 100) g[0] = 100, g[1] = -100, g[2] = 0, g[3] = 88.5f, g[4] = -88.5f;
      std::vector<float> g1 = g, g2 = g;
      k->swiglu(g1.data(), u.data(), n);
      ref.swiglu(g2.data(), u.data(), n);
      INFO(isa_name(isa) << " n=" << n);
      for (int i = 0; i < n; ++i) REQUIRE(g1[i] == Approx(g2[i]).epsilon(1e-5).margin(1e-6));
    }
  }
}

TEST_CASE("rmsnorm equals ops::rmsnorm bit for bit on every ISA", "[vec]") {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0, 1);
  const VecKernels& ref = *ref_vec_kernels();
  int checked = 0;
  for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
    const VecKernels* k = vec_kernels_for(isa);
    if (!k) {
      WARN("skipped: this CPU cannot run " << isa_name(isa));
      continue;
    }
    for (int n : {1, 7, 8, 9, 15, 16, 17, 100, 2048, 5000}) {
      for (float magnitude : {1e-3f, 1.0f, 3e3f}) {
        std::vector<float> x(n), w(n), a(n, -1.0f), b(n, -2.0f);
        for (int i = 0; i < n; ++i) x[i] = magnitude * nd(rng), w[i] = 1 + 0.1f * nd(rng);
        k->rmsnorm(a.data(), x.data(), w.data(), n, 1e-5f);
        ops::rmsnorm(b.data(), x.data(), w.data(), n, 1e-5f);
        INFO(isa_name(isa) << " n=" << n << " magnitude=" << magnitude);
        REQUIRE(std::memcmp(a.data(), b.data(), sizeof(float) * n) == 0);
        ++checked;
      }
    }
    // The reference table is ops::rmsnorm itself; the others must not be.
    if (isa != Isa::scalar) REQUIRE(k->rmsnorm != ref.rmsnorm);
  }
  REQUIRE(checked >= 30);
}

TEST_CASE("read_sum agrees with the reference on every ISA, at any alignment and length", "[vec]") {
  std::mt19937_64 rng(5);
  std::vector<uint8_t> buf(5064);  // the longest length at the largest offset
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  const VecKernels& ref = *ref_vec_kernels();
  // The reference itself on a case worked by hand: two words and 3 tail bytes.
  const uint8_t small[19] = {1, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 2, 1, 0};
  CHECK(ref.read_sum(small, 16, 1, false) == 0);  // 1 + (2^64 - 1) wraps
  CHECK(ref.read_sum(small, 19, 1, false) == 0x0102);
  for (Isa isa : {Isa::avx2, Isa::avx512}) {
    const VecKernels* k = vec_kernels_for(isa);
    if (!k) {
      WARN("skipped: this CPU cannot run " << isa_name(isa));
      continue;
    }
    for (int streams : {1, 2, 4})
      for (bool touch : {false, true})
        for (size_t off : {0, 1, 7, 64})
          for (size_t n : {0, 5, 8, 127, 128, 255, 256, 257, 511, 512, 513, 1000, 1025, 2047, 2048, 4096, 5000}) {
            INFO(isa_name(isa) << " streams " << streams << " touch " << touch << " offset " << off << " bytes " << n);
            CHECK(k->read_sum(buf.data() + off, n, streams, touch) == ref.read_sum(buf.data() + off, n, 1, false));
          }
  }
}

TEST_CASE("exp_sum agrees with expf on every ISA, zero below the floor and for -Inf", "[vec]") {
  std::mt19937 rng(13);
  std::normal_distribution<float> nd(0, 6);
  const VecKernels& ref = *ref_vec_kernels();
  // The reference itself: e^0, e^-1, below the floor, and -Inf.
  const float x4[4] = {2.0f, 1.0f, -200.0f, -INFINITY};
  float o4[4];
  CHECK(ref.exp_sum(o4, x4, 4, 2.0f, 1.0f) == Approx(1.0 + std::exp(-1.0)).epsilon(1e-7));
  CHECK(o4[0] == 1.0f);
  CHECK(o4[2] == 0.0f);
  CHECK(o4[3] == 0.0f);
  for (Isa isa : {Isa::avx2, Isa::avx512}) {
    const VecKernels* k = vec_kernels_for(isa);
    if (!k) {
      WARN("skipped: this CPU cannot run " << isa_name(isa));
      continue;
    }
    for (int n : {1, 7, 16, 31, 33, 100, 32000, 32003}) {
      std::vector<float> x(n), o1(n), o2(n);
      for (auto& v : x) v = nd(rng);
      if (n > 3) x[1] = -INFINITY, x[2] = -1e30f;
      float mx = x[0];
      for (float v : x) mx = std::max(mx, v);
      for (float scale : {1.0f, 1.25f, 5.0f}) {
        INFO(isa_name(isa) << " n=" << n << " scale " << scale);
        const double s1 = k->exp_sum(o1.data(), x.data(), n, mx, scale);
        const double s2 = ref.exp_sum(o2.data(), x.data(), n, mx, scale);
        CHECK(s1 == Approx(s2).epsilon(1e-6));
        int bad = 0;
        for (int i = 0; i < n; ++i) {
          const float a = (x[i] - mx) * scale;
          bad += a < kExpFloor ? o1[i] != 0.0f : std::fabs(o1[i] - o2[i]) > 1e-6f * o2[i];
        }
        CHECK(bad == 0);
        if (n > 3) CHECK((o1[1] == 0 && o1[2] == 0));
      }
    }
  }
}

TEST_CASE("rmsnorm matches a long-double reference at any length", "[vec][ops]") {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0, 3);
  for (int n : {1, 7, 8, 13, 2048, 5632, 5639}) {
    std::vector<float> x(n), w(n), out(n);
    for (int i = 0; i < n; ++i) x[i] = nd(rng), w[i] = nd(rng);
    // One large value among small ones: partial sums must not lose it.
    if (n > 8) x[n / 3] = 4000.0f;
    const float eps = 1e-5f;
    ops::rmsnorm(out.data(), x.data(), w.data(), n, eps);
    long double ss = 0;
    for (int i = 0; i < n; ++i) ss += static_cast<long double>(x[i]) * x[i];
    const long double scale = 1.0L / std::sqrt(ss / n + eps);
    INFO("n=" << n);
    for (int i = 0; i < n; ++i)
      CHECK(out[i] == Approx(static_cast<double>(x[i] * scale * w[i])).epsilon(1e-6).margin(1e-30));
  }
}
