// SPDX-License-Identifier: MIT
// AMX-BF16 gemms over packed weights (kernels/packed.h), for prompt-sized
// batches; below kAmxMinCols columns (decode, small batches: bound by
// memory) each table calls the AVX-512 packed kernel of its type.
// (kAmxMinCols, packed.h: each call dequantizes its weights once, which only
// pays when enough columns share it.)
//
// A tile product TDPBF16PS adds, for 16 x 16 outputs, A[m][2p..2p+1] .
// B[p][2n..2n+1] over 16 pairs p, with f32 sums:
//  - A (16 rows x 64 bytes): 16 activation columns x 32 k values in bf16,
//    rows one column stride apart (the bf16 part of every column, see the
//    activation formats below);
//  - B (16 rows x 64 bytes): pairs p = 0..15 of one 32-value k block, row r's
//    pair at 64p + 4r: exactly the packed F16/BF16 layout, so a k block of
//    a bf16 row group is 1 KB contiguous. Quantized groups are dequantized
//    (scale applied, rounded to bf16) into that layout once per call;
//  - C (16 x 16 f32): 16 output floats (rows) per column, i.e. out[c *
//    out_stride + r] with the rows of one group, stored directly.
// Tiles of 32 columns x 32 rows (2 A, 2 B, 4 C of the 8 tile registers)
// reuse every tile load for two products.
//
// Why bf16 rather than AMX-INT8: Q4_0/Q8_0 and the K-quants carry a scale
// per 16-32 weights, so int8 tiles would need their int32 sums stored and
// rescaled after every block in AVX-512; bf16 weights carry their scale and
// a tile sum runs over all of k. The AVX-512 F16/BF16 batch path rounds to
// bf16 the same way.
#include <cstdlib>

#include "kernels/amx/tiles.h"
#include "kernels/avx512/common.h"
#include "kernels/isa_tables.h"
#include "kernels/packed.h"
#include "kernels/variants.h"
#include "quant/blocks.h"

namespace brisk::kernels {

// The tests' build (tiles.h) compiles this file a second time, into its own
// namespace, with the tile instructions run by the model.
#if defined(BRISK_AMX_MODEL)
namespace amx_model {
#else
namespace amx {
#endif

namespace {

constexpr int64_t kBlockK = 32;       // k values per tile product
constexpr size_t kTileBytes = 1024;   // one B tile: 16 pairs x 16 rows x 2 bf16
// Bytes of dequantized weights per chunk of row groups (kept in L2 while
// every column panel passes).
// 1 MiB leaves room in a 2 MiB L2 for a 32-column panel of activations
// (360 KB at k = 5632).
constexpr size_t kChunkBytes = size_t{1024} << 10;

struct ScratchBuf {
  void* p = nullptr;
  size_t size = 0;
  ~ScratchBuf() { std::free(p); }
};
// Per thread: dequantized weights, the zero-padded tail columns, one C tile.
thread_local ScratchBuf t_weights, t_tail;

void* grow(ScratchBuf& b, size_t bytes) {
  if (b.size < bytes) {
    std::free(b.p);
    size_t want = (bytes + bytes / 2 + 63) & ~static_cast<size_t>(63);
    b.p = std::aligned_alloc(64, want);
    if (!b.p) std::abort();
    b.size = want;
  }
  return b.p;
}

size_t round64(size_t n) { return (n + 63) & ~static_cast<size_t>(63); }

// ---- Activation formats: the AVX-512 kernel's, then from the next 64-byte
// boundary the k values in bf16 (round to nearest even, as vcvtneps2bf16).
// Columns are padded to 64 bytes so every A tile row starts aligned.
size_t q8_0_bf16_offset(int64_t k) { return round64(q8_0_sums_bytes(k)); }
size_t q8_k_bf16_offset(int64_t k) { return round64(static_cast<size_t>(k / 256) * sizeof(quant::BlockQ8_K)); }
size_t q8_0_bf16_bytes(int64_t k) { return round64(q8_0_bf16_offset(k) + 2 * static_cast<size_t>(k)); }
size_t q8_k_bf16_bytes(int64_t k) { return round64(q8_k_bf16_offset(k) + 2 * static_cast<size_t>(k)); }

void to_bf16(const float* x, uint8_t* h, int64_t k) {
  int64_t i = 0;
  for (; i + 16 <= k; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(h + 2 * i), (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(x + i)));
  if (i < k) {
    const __mmask16 m = avx512::lane_mask(k - i);
    _mm256_mask_storeu_epi16(h + 2 * i, m, (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

void quantize_q8_0_bf16(const float* x, void* out, int64_t k) {
  avx512::quantize_q8_0_sums(x, out, k);
  to_bf16(x, static_cast<uint8_t*>(out) + q8_0_bf16_offset(k), k);
}
void quantize_q8_k_bf16(const float* x, void* out, int64_t k) {
  avx512::quantize_q8_k(x, out, k);
  to_bf16(x, static_cast<uint8_t*>(out) + q8_k_bf16_offset(k), k);
}

// ---- Dequantization of one packed row group into B tiles: k block kb at
// dst + 1024 kb, pair p of row r at + 64p + 4r.

// Weights v0 (value 2q) and v1 (value 2q + 1) of 16 rows as one line of bf16 pairs.
inline void store_pair(uint8_t* dst, __m512 v0, __m512 v1) {
  // cvtne2ps puts v0's 16 values in elements 0-15 and v1's in 16-31;
  // element 2r must be row r's v0, 2r + 1 its v1.
  const __m512i interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7,
                                              22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  const __m512i t = (__m512i)_mm512_cvtne2ps_pbh(v1, v0);
  _mm512_store_si512(dst, _mm512_permutexvar_epi16(interleave, t));
}

// Four consecutive weights per row, as the 4 bytes (unsigned) of each row's
// 32-bit lane: value = q * scale + bias. Writes pairs at dst and dst + 64.
inline void emit4(uint8_t* dst, __m512i q, __m512 scale, __m512 bias) {
  const __m512i byte = _mm512_set1_epi32(0xFF);
  __m512 v[4];
  for (int i = 0; i < 4; ++i)
    v[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_and_si512(_mm512_srli_epi32(q, 8 * i), byte)), scale, bias);
  store_pair(dst, v[0], v[1]);
  store_pair(dst + 64, v[2], v[3]);
}

inline __m512 fp16x16(const uint8_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
inline __m512i u8x16(const uint8_t* p) {
  return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Q4_0 / Q8_0: blocks of 32 in pairs (packed.h); value = d (q - offset).
template <int kSlices>
void dequant_q_group(const uint8_t* grp, int64_t k, uint8_t* dst) {
  constexpr size_t pair_bytes = 64 + 2 * kSlices * 64;
  const __m512i nib = _mm512_set1_epi8(0x0F);
  for (int64_t b = 0; b < k / 32; ++b) {
    const uint8_t* base = grp + static_cast<size_t>(b / 2) * pair_bytes;
    const __m512 d = fp16x16(base + 32 * (b % 2));
    const uint8_t* s = base + 64 + (b % 2) * kSlices * 64;
    uint8_t* o = dst + static_cast<size_t>(b) * kTileBytes;
    if constexpr (kSlices == 4) {
      const __m512 bias = _mm512_mul_ps(d, _mm512_set1_ps(-8.0f));
      for (int m = 0; m < 4; ++m) {
        const __m512i q = _mm512_loadu_si512(s + 64 * m);
        emit4(o + 128 * m, _mm512_and_si512(q, nib), d, bias);                            // weights 4m..
        emit4(o + 512 + 128 * m, _mm512_and_si512(_mm512_srli_epi16(q, 4), nib), d, bias);  // 16 + 4m..
      }
    } else {
      const __m512 bias = _mm512_mul_ps(d, _mm512_set1_ps(-128.0f));
      for (int m = 0; m < 8; ++m) emit4(o + 128 * m, _mm512_loadu_si512(s + 64 * m), d, bias);
    }
  }
}

// Q4_K: value = d sc q - dmin mn per sub-block of 32.
void dequant_q4_k_group(const uint8_t* grp, int64_t k, uint8_t* dst) {
  const __m512i nib = _mm512_set1_epi8(0x0F);
  for (int64_t b = 0; b < k / 256; ++b) {
    const uint8_t* sb = grp + static_cast<size_t>(b) * kQ4KSuperBytes;
    const __m512 d = fp16x16(sb), dmin = fp16x16(sb + 32);
    for (int j = 0; j < 4; ++j) {
      __m512 scale[2], bias[2];
      for (int h = 0; h < 2; ++h) {
        const int s = 2 * j + h;
        const __m512i sc = u8x16(sb + kQ4KScales + 16 * s);
        const __m512i lo = _mm512_and_si512(_mm512_srli_epi32(u8x16(sb + kQ4KMinsLow + 16 * j), 4 * h),
                                            _mm512_set1_epi32(0x0F));
        const __m512i mn = _mm512_or_si512(lo, _mm512_slli_epi32(_mm512_srli_epi32(sc, 6), 4));
        scale[h] = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_and_si512(sc, _mm512_set1_epi32(63))));
        bias[h] = _mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(mn)));
      }
      uint8_t* o = dst + static_cast<size_t>(8 * b + 2 * j) * kTileBytes;
      for (int m = 0; m < 8; ++m) {
        const __m512i q = _mm512_loadu_si512(sb + kQ4KNibbles + 512 * j + 64 * m);
        emit4(o + 128 * m, _mm512_and_si512(q, nib), scale[0], bias[0]);
        emit4(o + kTileBytes + 128 * m, _mm512_and_si512(_mm512_srli_epi16(q, 4), nib), scale[1], bias[1]);
      }
    }
  }
}

// Q6_K: value = d sc (q - 32) per sub-block of 16, q 6 bits from a nibble
// slice and a 2-bit slice.
void dequant_q6_k_group(const uint8_t* grp, int64_t k, uint8_t* dst) {
  const __m512i nib = _mm512_set1_epi8(0x0F), two = _mm512_set1_epi8(3);
  for (int64_t b = 0; b < k / 256; ++b) {
    const uint8_t* sb = grp + static_cast<size_t>(b) * kQ6KSuperBytes;
    const __m512 d = fp16x16(sb);
    __m512 scale[16], bias[16];
    for (int s = 0; s < 16; ++s) {
      const __m512i sc = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sb + 32 + 16 * s)));
      scale[s] = _mm512_mul_ps(d, _mm512_cvtepi32_ps(sc));
      bias[s] = _mm512_mul_ps(scale[s], _mm512_set1_ps(-32.0f));
    }
    for (int j = 0; j < 4; ++j) {
      uint8_t* o = dst + static_cast<size_t>(8 * b + 2 * j) * kTileBytes;
      const int shift = 4 * (j % 2);  // 2-bit fields 2(j%2) and 2(j%2)+1
      for (int m = 0; m < 8; ++m) {
        const __m512i lo = _mm512_loadu_si512(sb + q6k_lo_offset(j, m));
        const __m512i hi = _mm512_loadu_si512(sb + q6k_hi_offset(j / 2, m));
        const __m512i q0 = _mm512_or_si512(
            _mm512_and_si512(lo, nib),
            _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(hi, shift), two), 4));
        const __m512i q1 = _mm512_or_si512(
            _mm512_and_si512(_mm512_srli_epi32(lo, 4), nib),
            _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(hi, shift + 2), two), 4));
        const int s0 = 4 * j + m / 4;  // weights 64j + 4m + i; the others 32 later
        emit4(o + 128 * m, q0, scale[s0], bias[s0]);
        emit4(o + kTileBytes + 128 * m, q1, scale[s0 + 2], bias[s0 + 2]);
      }
    }
  }
}

// F16: the layout already is B tiles' layout; only the values change.
void dequant_f16_group(const uint8_t* grp, int64_t k, uint8_t* dst) {
  for (int64_t p = 0; p < k / 2; ++p) {
    const __m512 lo = fp16x16(grp + 64 * p), hi = fp16x16(grp + 64 * p + 32);
    _mm512_store_si512(dst + 64 * p, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
  }
}

// ---- The tile loop.

struct TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64);

// Tiles 0-3: C (column panel half i, row group j at 2i + j); 4-5: A; 6-7: B.
void configure_tiles() {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = 16;
  }
  BRISK_TILE_CONFIG(&cfg);
}

struct Panel {
  const uint8_t* a;  // bf16 k values of the panel's first column
  size_t a_stride;
  int ncols;  // valid columns, 1..32 (the rest is zero padding)
  int c0;     // first output column
};

struct Dest {
  float* out;
  size_t out_stride;
  int nrows;  // of the whole call
};

// Stores a C tile (columns c0.. of row group g) with store(ptr, stride)
// (tile numbers must be literals): straight into out when whole, else
// through a 16 x 16 buffer.
template <typename Store>
inline void store_c(const Dest& d, int g, int c0, int cols, Store store) {
  const int rows = d.nrows - g * kPackRows;
  float* o = d.out + static_cast<size_t>(c0) * d.out_stride + static_cast<size_t>(g) * kPackRows;
  if (rows >= kPackRows && cols >= 16) {
    store(o, static_cast<long>(d.out_stride * sizeof(float)));
    return;
  }
  alignas(64) float buf[16 * 16];
  store(buf, 64L);
  const __mmask16 m = avx512::lane_mask(rows);
  for (int c = 0; c < cols; ++c) _mm512_mask_storeu_ps(o + static_cast<size_t>(c) * d.out_stride, m, _mm512_load_ps(buf + 16 * c));
}

// One 32-column panel times row groups g (B tiles at b0) and, if NB == 2,
// g + 1 (at b1), over nkb k blocks.
template <int NB>
void panel_times_groups(const Panel& p, const uint8_t* b0, const uint8_t* b1, size_t b_stride, int64_t nkb,
                        const Dest& d, int g) {
  const long as = static_cast<long>(p.a_stride);
  const bool two_a = p.ncols > 16;
  const uint8_t* a1 = p.a + 16 * p.a_stride;
  BRISK_TILE_ZERO(0);
  BRISK_TILE_ZERO(1);
  BRISK_TILE_ZERO(2);
  BRISK_TILE_ZERO(3);
  for (int64_t kb = 0; kb < nkb; ++kb) {
    const size_t ka = 64 * static_cast<size_t>(kb), kw = static_cast<size_t>(kb) * b_stride;
    BRISK_TILE_LOAD(4, p.a + ka, as);
    BRISK_TILE_LOAD(6, b0 + kw, 64);
    BRISK_TILE_DPBF16PS(0, 4, 6);
    if constexpr (NB == 2) {
      BRISK_TILE_LOAD(7, b1 + kw, 64);
      BRISK_TILE_DPBF16PS(1, 4, 7);
    }
    if (two_a) {
      BRISK_TILE_LOAD(5, a1 + ka, as);
      BRISK_TILE_DPBF16PS(2, 5, 6);
      if constexpr (NB == 2) BRISK_TILE_DPBF16PS(3, 5, 7);
    }
  }
  const int cols0 = p.ncols < 16 ? p.ncols : 16;
  store_c(d, g, p.c0, cols0, [](void* o, long s) { BRISK_TILE_STORE(0, o, s); });
  if constexpr (NB == 2) store_c(d, g + 1, p.c0, cols0, [](void* o, long s) { BRISK_TILE_STORE(1, o, s); });
  if (two_a) {
    store_c(d, g, p.c0 + 16, p.ncols - 16, [](void* o, long s) { BRISK_TILE_STORE(2, o, s); });
    if constexpr (NB == 2) store_c(d, g + 1, p.c0 + 16, p.ncols - 16, [](void* o, long s) { BRISK_TILE_STORE(3, o, s); });
  }
}

using DequantFn = void (*)(const uint8_t* grp, int64_t k, uint8_t* dst);

// dequant == nullptr: the weights are BF16 and serve as B tiles in place
// (k block kb of a group at + 1024 kb, groups w_stride apart).
void gemm_tiles(DequantFn dequant, int64_t k, const uint8_t* w, size_t w_stride, int nrows, const uint8_t* xh,
                size_t act_stride, int ncols, float* out, size_t out_stride) {
  const int64_t nkb = k / kBlockK;
  const size_t group_bf16 = static_cast<size_t>(k) * 2 * kPackRows;
  const int ngroups = (nrows + kPackRows - 1) / kPackRows;
  int chunk = static_cast<int>(kChunkBytes / group_bf16);
  chunk = chunk < 2 ? 2 : chunk - chunk % 2;
  uint8_t* deq = dequant ? static_cast<uint8_t*>(grow(t_weights, static_cast<size_t>(chunk) * group_bf16)) : nullptr;
  // Columns past the last whole 32-column panel, zero-padded to 32 so that
  // no tile reads past the activations.
  const int full = ncols - ncols % 32;
  uint8_t* tail = nullptr;
  if (full < ncols) {
    const size_t row = 2 * static_cast<size_t>(k);
    tail = static_cast<uint8_t*>(grow(t_tail, 32 * row));
    for (int c = 0; c < 32; ++c) {
      if (full + c < ncols) {
        std::memcpy(tail + c * row, xh + static_cast<size_t>(full + c) * act_stride, row);
      } else {
        std::memset(tail + c * row, 0, row);
      }
    }
  }
  configure_tiles();
  const Dest d{out, out_stride, nrows};
  for (int g0 = 0; g0 < ngroups; g0 += chunk) {
    const int gn = ngroups - g0 < chunk ? ngroups - g0 : chunk;
    const uint8_t* b = w + static_cast<size_t>(g0) * w_stride;
    size_t b_group = w_stride;
    if (dequant) {
      for (int i = 0; i < gn; ++i) dequant(b + static_cast<size_t>(i) * w_stride, k, deq + i * group_bf16);
      b = deq;
      b_group = group_bf16;
    }
    for (int c0 = 0; c0 < ncols; c0 += 32) {
      const Panel p = c0 < full ? Panel{xh + static_cast<size_t>(c0) * act_stride, act_stride, 32, c0}
                                : Panel{tail, 2 * static_cast<size_t>(k), ncols - c0, c0};
      for (int i = 0; i < gn; i += 2) {
        const uint8_t* bi = b + static_cast<size_t>(i) * b_group;
        if (gn - i >= 2) {
          panel_times_groups<2>(p, bi, bi + b_group, kTileBytes, nkb, d, g0 + i);
        } else {
          panel_times_groups<1>(p, bi, nullptr, kTileBytes, nkb, d, g0 + i);
        }
      }
    }
  }
  // The tile state is 8 KB more to save at every context switch until released.
  BRISK_TILE_RELEASE();
}

// ---- The tables' gemms: AMX from kAmxMinCols columns (k whole 32-value
// blocks), else the AVX-512 kernel of the same type and activations.

using GemmFn = void (*)(int64_t, const void*, size_t, int, const void*, size_t, int, float*, size_t);

template <GemmFn kFallback, DequantFn kDequant, size_t (*kBf16Offset)(int64_t)>
void gemm(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride, int ncols,
          float* out, size_t out_stride) {
  if (ncols < kAmxMinCols || k % kBlockK != 0) {
    kFallback(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
    return;
  }
  const auto* xh = static_cast<const uint8_t*>(act) + kBf16Offset(k);
  gemm_tiles(kDequant, k, static_cast<const uint8_t*>(w), w_stride, nrows, xh, act_stride, ncols, out, out_stride);
}

}  // namespace

// The tables: AMX from kAmxMinCols columns, the AVX-512 kernels below.
const MatmulKernel* packed_matmul_kernel(TensorType t) {
  static const MatmulKernel q4_0{
      TensorType::Q8_0, quantize_q8_0_bf16,
      gemm<avx512::gemm_q4_0_packed, dequant_q_group<4>, q8_0_bf16_offset>, q8_0_bf16_bytes, true};
  static const MatmulKernel q8_0{
      TensorType::Q8_0, quantize_q8_0_bf16,
      gemm<avx512::gemm_q8_0_packed, dequant_q_group<8>, q8_0_bf16_offset>, q8_0_bf16_bytes, true};
  static const MatmulKernel q4_k{TensorType::Q8_K, quantize_q8_k_bf16,
                                 gemm<avx512::gemm_q4_k_packed, dequant_q4_k_group, q8_k_bf16_offset>,
                                 q8_k_bf16_bytes, true};
  static const MatmulKernel q6_k{TensorType::Q8_K, quantize_q8_k_bf16,
                                 gemm<avx512::gemm_q6_k_packed, dequant_q6_k_group, q8_k_bf16_offset>,
                                 q8_k_bf16_bytes, true};
  static const MatmulKernel f16{TensorType::BF16, avx512::quantize_packed_float_act,
                                gemm<avx512::gemm_f16_packed, dequant_f16_group, packed_float_act_offset>,
                                packed_float_act_bytes, true};
  static const MatmulKernel bf16{TensorType::BF16, avx512::quantize_packed_float_act,
                                 gemm<avx512::gemm_bf16_packed, nullptr, packed_float_act_offset>,
                                 packed_float_act_bytes, true};
  switch (t) {
    case TensorType::Q4_0: return &q4_0;
    case TensorType::Q8_0: return &q8_0;
    case TensorType::Q4_K: return &q4_k;
    case TensorType::Q6_K: return &q6_k;
    case TensorType::F16: return &f16;
    case TensorType::BF16: return &bf16;
    default: return nullptr;
  }
}

}  // namespace amx or amx_model

#if !defined(BRISK_AMX_MODEL)
const MatmulKernel* amx_packed_matmul_kernel(TensorType t) { return amx::packed_matmul_kernel(t); }

// No variants beyond the default table yet.
void amx_extra_variants(TensorType, std::vector<KernelVariant>&) {}
#endif

}  // namespace brisk::kernels
