// Attention vector kernels: every ISA the machine runs agrees with the reference.
#include <catch2/catch.hpp>
#include <random>
#include <vector>

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
      }
    }
  }
}
