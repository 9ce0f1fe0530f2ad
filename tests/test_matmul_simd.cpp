// SPDX-License-Identifier: MIT
// SIMD matrix kernels (avx2/, avx512/) against scalar ground truth.
//
// Two references: an independent one written here from ggml's definitions
// (dequantize both sides, sum in double), and the engine's scalar kernel
// (ref/, matmul_kernel_for(t, Isa::scalar)). quantize_act must match both
// byte for byte; gemm must match to float-rounding tolerance.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/fp16.h"
#include "core/tensor_type.h"
#include "kernels/matmul.h"
#include "kernels/packed.h"
#include "quant/blocks.h"

using namespace brisk;
using namespace brisk::kernels;
using namespace brisk::quant;

namespace {

const TensorType kTypes[] = {TensorType::F32,  TensorType::F16,  TensorType::BF16,
                             TensorType::Q8_0, TensorType::Q4_0, TensorType::Q4_1,
                             TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K};
const Isa kSimdIsas[] = {Isa::avx2, Isa::avx512};

// ---- scalar ground truth, written from ggml's reference code ----

int nearest_int(float v) {
  const float biased = v + 12582912.f;
  int32_t i;
  std::memcpy(&i, &biased, 4);
  return (i & 0x007fffff) - 0x00400000;
}

void ref_quantize(TensorType act, const float* x, void* out, int64_t k) {
  switch (act) {
    case TensorType::F32: std::memcpy(out, x, k * sizeof(float)); return;
    case TensorType::Q8_0:
    case TensorType::Q8_1:
      for (int64_t b = 0; b < k / 32; ++b) {
        const float* xb = x + b * 32;
        float amax = 0;
        for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(xb[j]));
        const float d = amax / 127;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        int8_t q[32];
        int sum = 0;
        for (int j = 0; j < 32; ++j) {
          q[j] = static_cast<int8_t>(std::round(xb[j] * id));
          sum += q[j];
        }
        if (act == TensorType::Q8_0) {
          auto* y = static_cast<BlockQ8_0*>(out) + b;
          y->d = f32_to_fp16(d);
          std::memcpy(y->qs, q, 32);
        } else {
          auto* y = static_cast<BlockQ8_1*>(out) + b;
          y->d = f32_to_fp16(d);
          y->s = f32_to_fp16(static_cast<float>(sum) * d);
          std::memcpy(y->qs, q, 32);
        }
      }
      return;
    case TensorType::Q8_K:
      for (int64_t b = 0; b < k / 256; ++b) {
        const float* xb = x + b * 256;
        auto* y = static_cast<BlockQ8_K*>(out) + b;
        float amax = 0, max = 0;
        for (int j = 0; j < 256; ++j) {
          if (std::fabs(xb[j]) > amax) {
            amax = std::fabs(xb[j]);
            max = xb[j];
          }
        }
        std::memset(y, 0, sizeof *y);
        if (amax == 0) continue;
        const float iscale = -127.f / max;
        for (int j = 0; j < 256; ++j) y->qs[j] = static_cast<int8_t>(std::min(127, nearest_int(iscale * xb[j])));
        for (int j = 0; j < 16; ++j) {
          int s = 0;
          for (int i = 0; i < 16; ++i) s += y->qs[16 * j + i];
          y->bsums[j] = static_cast<int16_t>(s);
        }
        y->d = 1 / iscale;
      }
      return;
    default: FAIL("no act type");
  }
}

void scale_min_k4(int j, const uint8_t* q, int* d, int* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// Values (in double) that a row of `t` encodes.
std::vector<double> ref_dequant(TensorType t, const void* src, int64_t k) {
  std::vector<double> y(k);
  const auto* p = static_cast<const uint8_t*>(src);
  switch (t) {
    case TensorType::F32:
      for (int64_t i = 0; i < k; ++i) y[i] = reinterpret_cast<const float*>(p)[i];
      break;
    case TensorType::F16:
      for (int64_t i = 0; i < k; ++i) y[i] = fp16_to_f32(reinterpret_cast<const uint16_t*>(p)[i]);
      break;
    case TensorType::BF16:
      for (int64_t i = 0; i < k; ++i) y[i] = bf16_to_f32(reinterpret_cast<const uint16_t*>(p)[i]);
      break;
    case TensorType::Q8_0:
      for (int64_t b = 0; b < k / 32; ++b) {
        const auto& x = reinterpret_cast<const BlockQ8_0*>(p)[b];
        for (int j = 0; j < 32; ++j) y[b * 32 + j] = double(fp16_to_f32(x.d)) * x.qs[j];
      }
      break;
    case TensorType::Q8_1:
      for (int64_t b = 0; b < k / 32; ++b) {
        const auto& x = reinterpret_cast<const BlockQ8_1*>(p)[b];
        for (int j = 0; j < 32; ++j) y[b * 32 + j] = double(fp16_to_f32(x.d)) * x.qs[j];
      }
      break;
    case TensorType::Q4_0:
      for (int64_t b = 0; b < k / 32; ++b) {
        const auto& x = reinterpret_cast<const BlockQ4_0*>(p)[b];
        const double d = fp16_to_f32(x.d);
        for (int j = 0; j < 16; ++j) {
          y[b * 32 + j] = d * ((x.qs[j] & 15) - 8);
          y[b * 32 + j + 16] = d * ((x.qs[j] >> 4) - 8);
        }
      }
      break;
    case TensorType::Q4_1:
      // Without m: the test adds ggml's m * s term per block itself.
      for (int64_t b = 0; b < k / 32; ++b) {
        const auto& x = reinterpret_cast<const BlockQ4_1*>(p)[b];
        const double d = fp16_to_f32(x.d);
        for (int j = 0; j < 16; ++j) {
          y[b * 32 + j] = d * (x.qs[j] & 15);
          y[b * 32 + j + 16] = d * (x.qs[j] >> 4);
        }
      }
      break;
    case TensorType::Q8_K:
      for (int64_t b = 0; b < k / 256; ++b) {
        const auto& x = reinterpret_cast<const BlockQ8_K*>(p)[b];
        for (int j = 0; j < 256; ++j) y[b * 256 + j] = double(x.d) * x.qs[j];
      }
      break;
    case TensorType::Q4_K:
    case TensorType::Q5_K:
      for (int64_t b = 0; b < k / 256; ++b) {
        const uint8_t *scales, *qs, *qh = nullptr;
        uint16_t dh, mh;
        if (t == TensorType::Q4_K) {
          const auto& x = reinterpret_cast<const BlockQ4_K*>(p)[b];
          scales = x.scales, qs = x.qs, dh = x.d, mh = x.dmin;
        } else {
          const auto& x = reinterpret_cast<const BlockQ5_K*>(p)[b];
          scales = x.scales, qs = x.qs, qh = x.qh, dh = x.d, mh = x.dmin;
        }
        const double d = fp16_to_f32(dh), dmin = fp16_to_f32(mh);
        double* out = &y[b * 256];
        for (int j = 0; j < 4; ++j) {
          int sc0, m0, sc1, m1;
          scale_min_k4(2 * j, scales, &sc0, &m0);
          scale_min_k4(2 * j + 1, scales, &sc1, &m1);
          for (int l = 0; l < 32; ++l) {
            const int h0 = qh && (qh[l] >> (2 * j) & 1) ? 16 : 0;
            const int h1 = qh && (qh[l] >> (2 * j + 1) & 1) ? 16 : 0;
            out[64 * j + l] = d * sc0 * ((qs[32 * j + l] & 15) + h0) - dmin * m0;
            out[64 * j + 32 + l] = d * sc1 * ((qs[32 * j + l] >> 4) + h1) - dmin * m1;
          }
        }
      }
      break;
    case TensorType::Q6_K:
      for (int64_t b = 0; b < k / 256; ++b) {
        const auto& x = reinterpret_cast<const BlockQ6_K*>(p)[b];
        const double d = fp16_to_f32(x.d);
        for (int n = 0; n < 2; ++n) {
          const uint8_t* ql = x.ql + 64 * n;
          const uint8_t* qh = x.qh + 32 * n;
          const int8_t* sc = x.scales + 8 * n;
          double* out = &y[b * 256 + 128 * n];
          for (int l = 0; l < 32; ++l) {
            const int is = l / 16;
            out[l] = d * sc[is] * (((ql[l] & 15) | ((qh[l] >> 0 & 3) << 4)) - 32);
            out[l + 32] = d * sc[is + 2] * (((ql[l + 32] & 15) | ((qh[l] >> 2 & 3) << 4)) - 32);
            out[l + 64] = d * sc[is + 4] * (((ql[l] >> 4) | ((qh[l] >> 4 & 3) << 4)) - 32);
            out[l + 96] = d * sc[is + 6] * (((ql[l + 32] >> 4) | ((qh[l] >> 6 & 3) << 4)) - 32);
          }
        }
      }
      break;
    default: FAIL("no dequant");
  }
  return y;
}

// Expected dot and a bound on its rounding error.
void ref_dot(TensorType wt, TensorType at, const void* w, const void* a, int64_t k, double* dot, double* tol) {
  const std::vector<double> wv = ref_dequant(wt, w, k), av = ref_dequant(at, a, k);
  double s = 0, mag = 0;
  for (int64_t i = 0; i < k; ++i) {
    s += wv[i] * av[i];
    mag += std::fabs(wv[i] * av[i]);
  }
  if (wt == TensorType::Q4_1) {
    for (int64_t b = 0; b < k / 32; ++b) {
      const double m = fp16_to_f32(static_cast<const BlockQ4_1*>(w)[b].m);
      const double sa = fp16_to_f32(static_cast<const BlockQ8_1*>(a)[b].s);
      s += m * sa;
      mag += std::fabs(m * sa);
    }
  }
  *dot = s;
  *tol = 3e-6 * mag + 1e-35;
}

// ---- data ----

struct Gen {
  std::mt19937 rng;
  explicit Gen(uint32_t seed) : rng(seed) {}
  float normal() { return std::normal_distribution<float>(0, 1)(rng); }
  uint8_t byte() { return static_cast<uint8_t>(rng()); }
  // A plausible fp16 scale, or one of the extremes.
  uint16_t scale(bool extreme) {
    if (extreme) {
      const uint16_t e[] = {0x7BFF /*65504*/, 0x0001 /*min subnormal*/, 0x0400 /*min normal*/, 0x0000, 0xFBFF};
      return e[rng() % 5];
    }
    return f32_to_fp16(std::ldexp(1.0f + 0.5f * normal(), -4 - static_cast<int>(rng() % 6)) *
                       (rng() % 4 == 0 ? -1.0f : 1.0f));
  }
};

// One row of random weights; zero_blocks / extreme select edge cases.
void fill_row(Gen& g, TensorType t, uint8_t* row, int64_t k, bool zero_blocks, bool extreme) {
  const TypeTraits& tr = type_traits(t);
  const int64_t nb = k / tr.block_size;
  for (size_t i = 0; i < row_bytes(t, k); ++i) row[i] = g.byte();
  switch (t) {
    case TensorType::F32:
      for (int64_t i = 0; i < k; ++i) {
        const float v = extreme ? std::ldexp(g.normal(), static_cast<int>(g.rng() % 40) - 20) : g.normal();
        std::memcpy(row + 4 * i, &v, 4);
      }
      break;
    case TensorType::F16:
    case TensorType::BF16:
      for (int64_t i = 0; i < k; ++i) {
        const float v = extreme ? std::ldexp(g.normal(), static_cast<int>(g.rng() % 20) - 10) : g.normal();
        const uint16_t h = t == TensorType::F16 ? f32_to_fp16(v) : f32_to_bf16(v);
        std::memcpy(row + 2 * i, &h, 2);
      }
      break;
    default: {
      // Overwrite the fp16 scale fields with sane (or extreme) values.
      for (int64_t b = 0; b < nb; ++b) {
        uint8_t* blk = row + b * tr.type_size;
        const bool ex = extreme && g.rng() % 3 == 0;
        uint16_t s0 = g.scale(ex), s1 = g.scale(ex);
        switch (t) {
          case TensorType::Q6_K: std::memcpy(blk + 208, &s0, 2); break;
          case TensorType::Q4_1:
          case TensorType::Q4_K:
          case TensorType::Q5_K:
            if (t != TensorType::Q4_1) s1 &= 0x7FFF;  // dmin is non-negative in practice
            std::memcpy(blk, &s0, 2);
            std::memcpy(blk + 2, &s1, 2);
            break;
          default: std::memcpy(blk, &s0, 2); break;
        }
      }
    }
  }
  if (zero_blocks && nb > 0) {
    // Some whole blocks all-zero bytes (scale 0 and quants 0).
    for (int64_t b = 0; b < nb; ++b)
      if (g.rng() % 3 == 0) std::memset(row + b * tr.type_size, 0, tr.type_size);
  }
}

void fill_act(Gen& g, float* x, int64_t k, bool edge) {
  for (int64_t i = 0; i < k; ++i) x[i] = g.normal();
  if (!edge) return;
  for (int64_t i = 0; i < k; ++i) {
    switch (g.rng() % 16) {
      case 0: x[i] = 0; break;
      case 1: x[i] *= 1e4f; break;
      case 2: x[i] *= 1e-6f; break;
      default: break;
    }
  }
  // An all-zero stretch (whole blocks of every block size).
  if (k >= 512) std::fill(x + 256, x + 512, 0.0f);
}

std::string label(TensorType t, Isa isa) { return std::string(type_name(t)) + "/" + isa_name(isa); }

// Compares kernel `kern` (and the engine's scalar kernel, when present) with
// the double-precision reference on one problem.
void check_gemm(const MatmulKernel& kern, TensorType t, Gen& g, int64_t k, int nrows, int ncols,
                size_t w_pad, size_t out_pad, bool edge) {
  const size_t rb = row_bytes(t, k);
  const size_t w_stride = rb + w_pad;
  std::vector<uint8_t> w(w_stride * nrows + 64, 0xCD);
  for (int r = 0; r < nrows; ++r) fill_row(g, t, w.data() + r * w_stride, k, edge, edge && r % 2 == 1);

  const size_t ab = row_bytes(kern.act_type, k);
  const size_t act_stride = ab + (edge ? 36 : 0);
  std::vector<uint8_t> act(act_stride * ncols + 64, 0xEE);
  std::vector<float> x(k);
  for (int c = 0; c < ncols; ++c) {
    fill_act(g, x.data(), k, edge);
    kern.quantize_act(x.data(), act.data() + c * act_stride, k);
  }
  const size_t out_stride = nrows + out_pad;
  const float sentinel = -12345.0f;
  std::vector<float> out(out_stride * ncols + 8, sentinel);
  kern.gemm(k, w.data(), w_stride, nrows, act.data(), act_stride, ncols, out.data(), out_stride);

  const MatmulKernel* ref = matmul_kernel_for(t, Isa::scalar);
  REQUIRE(ref != nullptr);
  std::vector<float> ref_out(out_stride * ncols, sentinel);
  ref->gemm(k, w.data(), w_stride, nrows, act.data(), act_stride, ncols, ref_out.data(), out_stride);
  for (int c = 0; c < ncols; ++c) {
    for (int r = 0; r < nrows; ++r) {
      double exp, tol;
      ref_dot(t, kern.act_type, w.data() + r * w_stride, act.data() + c * act_stride, k, &exp, &tol);
      const float got = out[c * out_stride + r];
      INFO("k=" << k << " rows=" << nrows << " cols=" << ncols << " r=" << r << " c=" << c << " edge=" << edge);
      REQUIRE(std::fabs(got - exp) <= tol + std::fabs(exp) * 2e-7);
      REQUIRE(std::fabs(got - ref_out[c * out_stride + r]) <= 2 * tol + std::fabs(exp) * 4e-7);
    }
    for (size_t r = nrows; r < out_stride; ++r) REQUIRE(out[c * out_stride + r] == sentinel);
  }
}

std::vector<int64_t> ks_for(TensorType t) {
  switch (type_traits(t).block_size) {
    case 1: return {1, 7, 16, 33, 100, 1000};
    case 32: return {32, 64, 96, 128, 160, 416, 2048};
    default: return {256, 512, 768, 1280, 2304};
  }
}

}  // namespace

TEST_CASE("simd quantize_act is byte-identical to the reference", "[simd]") {
  for (Isa isa : kSimdIsas) {
    if (!isa_supported(isa)) {
      WARN("skipped: CPU lacks " << isa_name(isa));
      continue;
    }
    for (TensorType t : kTypes) {
      const MatmulKernel* kern = matmul_kernel_for(t, isa);
      INFO(label(t, isa));
      REQUIRE(kern != nullptr);
      const MatmulKernel* ref = matmul_kernel_for(t, Isa::scalar);
      REQUIRE(ref != nullptr);
      REQUIRE(ref->act_type == kern->act_type);
      Gen g(7);
      for (int trial = 0; trial < 24; ++trial) {
        const int64_t k = 256 * (1 + trial % 4);
        std::vector<float> x(k);
        fill_act(g, x.data(), k, trial % 2 == 1);
        if (trial == 5) {
          // Exact halves: with amax 127 the Q8_0 scale is 1, so these hit
          // roundf's half-away-from-zero; with max -127 the Q8_K scale is 1
          // and they hit nearest_int's half-to-even.
          for (int64_t i = 0; i < k; ++i) x[i] = static_cast<float>(static_cast<int>(i % 254) - 127) + 0.5f;
          for (int64_t i = 0; i < k; i += 32) x[i] = 127;
          for (int64_t i = 0; i < k; i += 256) x[i] = -127;
        }
        if (trial == 7) {
          // Ties for the largest magnitude: Q8_K takes the first one's sign.
          for (int64_t i = 0; i < k; ++i) x[i] = (i % 5 == 0) ? ((i / 5) % 2 ? 3.0f : -3.0f) : 1.0f;
        }
        const size_t nbytes = row_bytes(kern->act_type, k);
        std::vector<uint8_t> got(nbytes + 16, 0xAB), want(nbytes + 16, 0xAB);
        kern->quantize_act(x.data(), got.data(), k);
        ref_quantize(kern->act_type, x.data(), want.data(), k);
        INFO("trial " << trial);
        REQUIRE(std::memcmp(got.data(), want.data(), nbytes + 16) == 0);
        std::vector<uint8_t> r(nbytes + 16, 0xAB);
        ref->quantize_act(x.data(), r.data(), k);
        REQUIRE(std::memcmp(got.data(), r.data(), nbytes + 16) == 0);
      }
    }
  }
}

TEST_CASE("simd packed-kernel encoders are byte-identical to the scalar packed ones", "[simd]") {
  // Q4_0 / Q8_0 read "Q8_0 with sums" (packed.h), the K-quants Q8_K.
  const TensorType types[] = {TensorType::Q4_0, TensorType::Q8_0, TensorType::Q4_K, TensorType::Q6_K};
  for (Isa isa : kSimdIsas) {
    if (!isa_supported(isa)) {
      WARN("skipped: CPU lacks " << isa_name(isa));
      continue;
    }
    for (TensorType t : types) {
      const MatmulKernel* kern = packed_matmul_kernel_for(t, isa);
      const MatmulKernel* ref = packed_matmul_kernel_for(t, Isa::scalar);
      INFO(label(t, isa));
      REQUIRE(kern != nullptr);
      REQUIRE(ref != nullptr);
      Gen g(11);
      for (int trial = 0; trial < 12; ++trial) {
        const int64_t k = 256 * (1 + trial % 4);
        std::vector<float> x(k);
        fill_act(g, x.data(), k, trial % 2 == 1);
        const size_t nbytes = kernels::act_column_bytes(*kern, k);
        REQUIRE(nbytes == kernels::act_column_bytes(*ref, k));
        std::vector<uint8_t> got(nbytes + 16, 0xAB), want(nbytes + 16, 0xAB);
        kern->quantize_act(x.data(), got.data(), k);
        ref->quantize_act(x.data(), want.data(), k);
        INFO("trial " << trial);
        REQUIRE(std::memcmp(got.data(), want.data(), nbytes + 16) == 0);
      }
    }
  }
}

TEST_CASE("simd gemm matches the reference on random data and edge shapes", "[simd]") {
  const int rows[] = {1, 3, 7, 33};
  const int cols[] = {1, 2, 3, 4, 5, 8, 17, 33};
  for (Isa isa : kSimdIsas) {
    if (!isa_supported(isa)) {
      WARN("skipped: CPU lacks " << isa_name(isa));
      continue;
    }
    for (TensorType t : kTypes) {
      const MatmulKernel* kern = matmul_kernel_for(t, isa);
      INFO(label(t, isa));
      REQUIRE(kern != nullptr);
      Gen g(static_cast<uint32_t>(t) * 31 + static_cast<uint32_t>(isa));
      const std::vector<int64_t> ks = ks_for(t);
      int n = 0;
      for (int nr : rows) {
        for (int nc : cols) {
          // Each shape with one k from the list, rotating, plus the smallest
          // k; strides padded on every other shape.
          const int64_t k = ks[n % ks.size()];
          const bool pad = n % 2 == 1;
          // Row padding keeps 4-byte alignment (GGUF aligns tensor data to
          // 32 bytes and every row size is a multiple of the element or block
          // alignment), but not 16/32/64, so SIMD loads must be unaligned.
          check_gemm(*kern, t, g, k, nr, nc, pad ? 12 + (n % 3) * 4 : 0, pad ? 5 : 0, n % 3 == 2);
          check_gemm(*kern, t, g, ks[0], nr, nc, pad ? 4 : 0, pad ? 1 : 0, false);
          ++n;
        }
      }
    }
  }
}

TEST_CASE("simd gemm: all-zero weights and activations give exact zeros", "[simd]") {
  for (Isa isa : kSimdIsas) {
    if (!isa_supported(isa)) continue;
    for (TensorType t : kTypes) {
      const MatmulKernel* kern = matmul_kernel_for(t, isa);
      INFO(label(t, isa));
      REQUIRE(kern != nullptr);
      const int64_t k = 512;
      std::vector<uint8_t> w(row_bytes(t, k) * 5, 0);
      std::vector<float> x(k, 1.0f);
      std::vector<uint8_t> act(row_bytes(kern->act_type, k) * 3);
      for (int c = 0; c < 3; ++c) kern->quantize_act(x.data(), act.data() + c * row_bytes(kern->act_type, k), k);
      std::vector<float> out(15, 1.0f);
      kern->gemm(k, w.data(), row_bytes(t, k), 5, act.data(), row_bytes(kern->act_type, k), 3, out.data(), 5);
      for (float v : out) REQUIRE(v == 0.0f);
      // Zero activations against random weights.
      Gen g(3);
      for (int r = 0; r < 5; ++r) fill_row(g, t, w.data() + r * row_bytes(t, k), k, false, false);
      std::fill(x.begin(), x.end(), 0.0f);
      for (int c = 0; c < 3; ++c) kern->quantize_act(x.data(), act.data() + c * row_bytes(kern->act_type, k), k);
      kern->gemm(k, w.data(), row_bytes(t, k), 5, act.data(), row_bytes(kern->act_type, k), 3, out.data(), 5);
      for (float v : out) REQUIRE(v == 0.0f);
    }
  }
}

// ---- packed layout (kernels/packed.h) ----

namespace {

// Packs row-major rows into 16-row groups.
std::vector<uint8_t> pack_matrix(TensorType t, const uint8_t* w, size_t w_stride, int nrows, int64_t k) {
  const size_t gb = packed_group_bytes(t, k);
  const int ng = (nrows + kPackRows - 1) / kPackRows;
  std::vector<uint8_t> p(gb * ng + 64, 0xCD);
  for (int g = 0; g < ng; ++g)
    pack_row_group(t, w + static_cast<size_t>(g) * kPackRows * w_stride, w_stride,
                   std::min(kPackRows, nrows - g * kPackRows), k, p.data() + gb * g);
  return p;
}

// A packed kernel against the row-major scalar kernel and the double
// reference on the same (unpacked) rows and activations.
void check_packed(const MatmulKernel& kern, TensorType t, Gen& g, int64_t k, int nrows, int ncols, bool edge) {
  const size_t rb = row_bytes(t, k);
  std::vector<uint8_t> w(rb * nrows + 64);
  for (int r = 0; r < nrows; ++r) fill_row(g, t, w.data() + r * rb, k, edge, edge && r % 2 == 1);
  const std::vector<uint8_t> p = pack_matrix(t, w.data(), rb, nrows, k);

  const size_t ab = act_column_bytes(kern, k) + (edge ? 4 : 0);
  std::vector<uint8_t> act(ab * ncols + 64, 0xEE);
  std::vector<float> x(k);
  for (int c = 0; c < ncols; ++c) {
    fill_act(g, x.data(), k, edge);
    kern.quantize_act(x.data(), act.data() + c * ab, k);
  }
  const size_t out_stride = nrows + 3;
  const float sentinel = -12345.0f;
  std::vector<float> out(out_stride * ncols, sentinel);
  kern.gemm(k, p.data(), packed_group_bytes(t, k), nrows, act.data(), ab, ncols, out.data(), out_stride);
  for (int c = 0; c < ncols; ++c) {
    for (int r = 0; r < nrows; ++r) {
      double exp, tol;
      ref_dot(t, kern.act_type, w.data() + r * rb, act.data() + c * ab, k, &exp, &tol);
      INFO("k=" << k << " rows=" << nrows << " cols=" << ncols << " r=" << r << " c=" << c << " edge=" << edge);
      REQUIRE(std::fabs(out[c * out_stride + r] - exp) <= tol + std::fabs(exp) * 2e-7);
    }
    for (size_t r = nrows; r < out_stride; ++r) REQUIRE(out[c * out_stride + r] == sentinel);
  }
}

}  // namespace

TEST_CASE("packed layout: pack then unpack gives the rows back", "[simd][packed]") {
  for (TensorType t : {TensorType::Q4_0, TensorType::Q8_0, TensorType::Q4_K, TensorType::Q6_K}) {
    REQUIRE(packable(t));
    Gen g(11);
    for (int64_t k : {32, 64, 96, 2048}) {
      if (k % type_traits(t).block_size) continue;
      for (int nrows : {1, 15, 16}) {
        const size_t rb = row_bytes(t, k);
        std::vector<uint8_t> w(rb * nrows), back(rb * nrows, 0);
        for (int r = 0; r < nrows; ++r) fill_row(g, t, w.data() + r * rb, k, true, r == 3);
        std::vector<uint8_t> grp(packed_group_bytes(t, k));
        pack_row_group(t, w.data(), rb, nrows, k, grp.data());
        unpack_row_group(t, grp.data(), nrows, k, back.data(), rb);
        INFO(type_name(t) << " k=" << k << " rows=" << nrows);
        REQUIRE(back == w);
      }
    }
    // An even block count packs into exactly the row-major size.
    REQUIRE(packed_group_bytes(t, 2048) == row_bytes(t, 2048) * kPackRows);
  }
  REQUIRE_FALSE(packable(TensorType::Q5_K));
}

TEST_CASE("packed gemm (scalar and simd) matches the reference", "[simd][packed]") {
  // Odd and even row-group counts: groups go two (or four) streams side by
  // side, as neighbours or as runs of several groups (150 rows: 10 groups;
  // 100 and 300 rows: runs of 3 and 9 groups with one group left over).
  const int rows[] = {1, 5, 16, 17, 33, 48, 80, 100, 150, 300};
  const int cols[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 16, 33, 40, 64};
  for (TensorType t : {TensorType::Q4_0, TensorType::Q8_0, TensorType::Q4_K, TensorType::Q6_K}) {
    for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
      const MatmulKernel* kern = packed_matmul_kernel_for(t, isa);
      if (!isa_supported(isa)) {
        WARN("skipped: CPU lacks " << isa_name(isa));
        continue;
      }
      INFO(label(t, isa));
      REQUIRE(kern != nullptr);
      REQUIRE(kern->packed);
      // The "Q8_0 with sums" activations: Q8_0 bytes identical to the
      // row-major kernels' and to the scalar packed kernel's.
      const MatmulKernel* plain = matmul_kernel_for(t, Isa::scalar);
      const MatmulKernel* ref = packed_matmul_kernel_for(t, Isa::scalar);
      Gen ga(5);
      for (int64_t k : {32, 96, 2048}) {
        if (kern->act_type == TensorType::Q8_K) break;  // plain Q8_K activations, tested above
        std::vector<float> x(k);
        fill_act(ga, x.data(), k, k == 2048);
        std::vector<uint8_t> a(act_column_bytes(*kern, k)), b(act_column_bytes(*ref, k)), c(row_bytes(TensorType::Q8_0, k));
        kern->quantize_act(x.data(), a.data(), k);
        ref->quantize_act(x.data(), b.data(), k);
        plain->quantize_act(x.data(), c.data(), k);
        REQUIRE(a == b);
        REQUIRE(std::memcmp(a.data(), c.data(), c.size()) == 0);
      }
      Gen g(static_cast<uint32_t>(t) * 17 + static_cast<uint32_t>(isa));
      const int64_t ks32[] = {32, 64, 96, 288, 2048};
      const int64_t ks256[] = {256, 512, 768, 2048, 5632};
      const int64_t* ks = type_traits(t).block_size == 256 ? ks256 : ks32;
      int n = 0;
      for (int nr : rows)
        for (int nc : cols) {
          check_packed(*kern, t, g, ks[n % 5], nr, nc, n % 3 == 2);
          ++n;
        }
    }
  }
}
