// SPDX-License-Identifier: MIT
// AVX-512 VNNI kernels over packed Q4_K / Q6_K weights (layout: packed.h)
// against Q8_K activations; the Q4_0 / Q8_0 ones are in matmul_packed.cpp.
#include "kernels/avx512/common.h"
#include "kernels/avx512/packed_tiles.h"
#include "kernels/packed.h"
#include "kernels/variants.h"
#include "quant/blocks.h"

namespace brisk::kernels::avx512 {

namespace {

// What the K-quant tiles share: 256-weight super-blocks against Q8_K columns.
//
// Few columns (decode) run run_few: the loop over a super-block's 8
// sub-blocks (Q4_K) or 8 runs of 32 (Q6_K) unrolled, short dependency
// chains, nothing through the stack; rolled, GCC keeps the choice of shift
// as branches per iteration; unrolled measured faster where compute binds.
// Q4_K's single column has its own form (Q4KTile::run_one), where run_few
// measured slower than a rolled loop; Q6_K's has one in its lean variant.
// From 5 columns on (prompt tiles of 8, batches of sequences) both run
// run_few once per 4 columns, which measured faster than a rolled loop over
// all the tile's columns.
constexpr int kUnrollCols = 4;

using simd::KTile;

// The column forms of a K-quant tile: one column its run_one where it has
// one (Q4_K, lean Q6_K), up to kUnrollCols run_few, wider tiles (prompts) run_few in
// pieces (see above).
template <int C, class Tile>
void run_k_tile(const Tile& t, int g, int c0) {
  if constexpr (C == 1 && requires { t.run_one(g, c0); }) {
    t.run_one(g, c0);
  } else if constexpr (C <= kUnrollCols) {
    t.template run_few<C>(g, c0);
  } else {
    t.template run_few<kUnrollCols>(g, c0);
    run_k_tile<C - kUnrollCols>(t, g, c0 + kUnrollCols);
  }
}

// The K-quant one-column tiles' default prefetch: each super-block's lines
// non-temporal 4.5 KB ahead, Q6_K's with page touches too (see
// Q4KTile::run_one).
constexpr StreamPrefetch kQ4KOne{1, _MM_HINT_NTA, static_cast<int>(kPrefetchBytes), 0, 0, 1};
constexpr StreamPrefetch kQ6KOne{1, _MM_HINT_NTA, static_cast<int>(kPrefetchBytes), 1,
                                 static_cast<int>(kPrefetchBytes), 1};
// The tiles of 2 or more columns prefetch each super-block's lines T0,
// without page touches (slower there): at 2 columns as far ahead as one
// column does (kNear), from 3 on twice as far (kFar). A tile of 3 or more
// columns takes longer per super-block, so its prefetches run further ahead
// to keep as many lines in flight; whole-engine decode of 4 sequences
// measured faster so, of 2 alike. Variants for the planner: either
// distance at every width (`.few.near`, `.few.far`).
constexpr int kNear = static_cast<int>(kPrefetchBytes);
constexpr int kFar = 2 * static_cast<int>(kPrefetchBytes);

// Q4_K super-blocks (packed.h). Per sub-block of 32: 8 vpdpbusd per column
// give each row's integer dot, which one FMA scales by the row's sub-block
// scale into a per-column float sum; the super-block's d, dmin and the
// activation's scale and sums finish it once per 256 weights.
// kLean (Q4_K and Q6_K): the one-column tile in its lean form (run_one).
// Near, Far: how far the tiles of 2 and of 3+ columns prefetch (kNear, kFar).
template <StreamPrefetch P = kQ4KOne, bool kLean = false, int Near = kNear, int Far = kFar>
struct Q4KTile : KTile {
  // Sub-block s's 16 row mins as lanes of two int16 halves, min_r in both:
  // one vpdpwssd against the activation's bsums 2s and 2s+1 gives
  // min_r x (bsum 2s + bsum 2s+1). A min is split in the layout (packed.h):
  // its low 4 bits in a nibble at kQ4KMinsLow, its top 2 in bits 6-7 of
  // the scale byte. (Forced inline: as a call, the 4-column run_few is far slower.)
  __attribute__((always_inline)) static __m512i mins_both_halves(const uint8_t* sb, int s) {
    // Lane bytes 4j and 4j+2 take byte j of the row's 16, the others zero.
    const __m512i dup_idx = _mm512_set_epi32(
        0x800F800F, 0x800E800E, 0x800D800D, 0x800C800C, 0x800B800B, 0x800A800A, 0x80098009, 0x80088008,
        0x80078007, 0x80068006, 0x80058005, 0x80048004, 0x80038003, 0x80028002, 0x80018001, 0x80008000);
    const auto rows16 = [&](size_t off) {
      return _mm512_shuffle_epi8(
          _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sb + off))), dup_idx);
    };
    __m512i low = rows16(kQ4KMinsLow + 16 * (s / 2));            // 16-bit halves: the byte of nibbles
    if (s % 2) low = _mm512_srli_epi16(low, 4);
    const __m512i top = _mm512_srli_epi16(rows16(kQ4KScales + 16 * s), 2);  // bits 4-5: the min's top bits
    // Bits 0-3 from low, the rest from top (top < 64: bits 4-5 only).
    return _mm512_ternarylogic_epi32(top, low, _mm512_set1_epi16(0x0F), 0xD8);
  }
  // The mins of sub-blocks 2j and 2j + 1 as the two int16 halves of each
  // row's lane, so that one vpdpwssd against the activation's sums per 32
  // of those sub-blocks gives the row's mins term for both. A min is split
  // in the layout (packed.h): rawe and rawo are the two sub-blocks' scale
  // bytes as int32 lanes, whose bits 6-7 are the mins' top bits; the byte at
  // kQ4KMinsLow + 16j holds both mins' low 4 bits. Half the unpacking and
  // half the vpdpwssd of a min per sub-block. (Forced inline, as the other
  // helpers: as calls, the 4-column run_few is far slower.)
  __attribute__((always_inline)) static __m512i mins_pair(const uint8_t* sb, int j, __m512i rawe, __m512i rawo) {
    const __m512i lo = u8_epi32(sb + kQ4KMinsLow + 16 * j);
    // (lo | lo << 12) & 0x000F000F: low nibble to bits 0-3, high nibble to 16-19.
    const __m512i low = _mm512_ternarylogic_epi32(lo, _mm512_slli_epi32(lo, 12), _mm512_set1_epi32(0x000F000F), 0xA8);
    // Top bits: rawe's 6-7 to 4-5, rawo's 6-7 to 20-21.
    const __m512i top = _mm512_ternarylogic_epi32(_mm512_srli_epi32(rawe, 2), _mm512_slli_epi32(rawo, 14),
                                                  _mm512_set1_epi32(0x00300030), 0xA8);
    return _mm512_or_si512(low, top);
  }
  __attribute__((always_inline)) static __m512i u8_epi32(const uint8_t* p) {
    return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  // Sub-block scales: the scale bytes of 16 rows at off, as int32 lanes, without the min's bits.
  __attribute__((always_inline)) static __m512i scales_epi32(const uint8_t* p) {
    return _mm512_and_si512(u8_epi32(p), _mm512_set1_epi32(63));
  }

  // 2 to kUnrollCols columns (decode of a few sequences), as Q6KTile's:
  // unrolled, two float sums per column, nothing through the stack. The high
  // nibbles are used in place (q & 0xF0 is 16 x the weight) with 1/16 folded
  // into their sub-block scale: one and instead of a shift and an and. The
  // mins term is integer: after each odd sub-block, one vpdpwssd per column
  // of mins_pair against the column's sums per 32 of the two sub-blocks
  // (vphaddw of its sums per 16 once per super-block, kept in a register:
  // broadcast from the stack instead, it measured slower at 3 columns).
  template <int C>
  void run_few(int g, int c0) const {
    static_assert(C >= 2, "one column runs run_one");
    const uint8_t* grp = group(g);
    const quant::BlockQ8_K* a[C];
    columns(c0, a);
    __m512 acc[C], accm[C];
    for (int c = 0; c < C; ++c) acc[c] = accm[c] = _mm512_setzero_ps();
    const __m512i lo = _mm512_set1_epi8(0x0F);
    for (int64_t b = 0; b < nsb; ++b) {
      const uint8_t* sb = grp + static_cast<size_t>(b) * kQ4KSuperBytes;
      prefetch_bytes<kQ4KSuperBytes>(sb + (C >= 3 ? Far : Near));
      __m512 t0[C], t1[C];
      __m512i mn_acc[C];
      __m512i b32[C];  // sums per 32 (sub-blocks 2j, 2j + 1 in word j of every 128-bit lane)
      for (int c = 0; c < C; ++c) {
        t0[c] = t1[c] = _mm512_setzero_ps(), mn_acc[c] = _mm512_setzero_si512();
        const auto* bs = reinterpret_cast<const __m128i*>(a[c][b].bsums);
        b32[c] = _mm512_broadcast_i32x4(_mm_hadd_epi16(_mm_loadu_si128(bs), _mm_loadu_si128(bs + 1)));
      }
      _Pragma("GCC unroll 8") for (int s = 0; s < 8; ++s) {
        const uint8_t* run = sb + kQ4KNibbles + 512 * (s / 2);
        __m512i i0[C], i1[C];
        for (int c = 0; c < C; ++c) i0[c] = i1[c] = _mm512_setzero_si512();
        for (int m = 0; m < 8; ++m) {
          const __m512i q = _mm512_loadu_si512(run + 64 * m);
          const __m512i w = s % 2 ? _mm512_andnot_si512(lo, q) : _mm512_and_si512(q, lo);
          for (int c = 0; c < C; ++c) {
            const __m512i x = _mm512_set1_epi32(load_i32(a[c][b].qs + 32 * s + 4 * m));
            if (m % 2) i1[c] = _mm512_dpbusd_epi32(i1[c], w, x); else i0[c] = _mm512_dpbusd_epi32(i0[c], w, x);
          }
        }
        __m512 sc = _mm512_cvtepi32_ps(scales_epi32(sb + kQ4KScales + 16 * s));
        if (s % 2) sc = _mm512_mul_ps(sc, _mm512_set1_ps(1.0f / 16));
        for (int c = 0; c < C; ++c) {
          const __m512 dot = _mm512_cvtepi32_ps(_mm512_add_epi32(i0[c], i1[c]));
          if (s % 2) t1[c] = _mm512_fmadd_ps(dot, sc, t1[c]); else t0[c] = _mm512_fmadd_ps(dot, sc, t0[c]);
        }
        if (s % 2) {
          // The mins of sub-blocks s - 1 and s together (mins_pair).
          const __m512i mn = mins_pair(sb, s / 2, u8_epi32(sb + kQ4KScales + 16 * (s - 1)),
                                       u8_epi32(sb + kQ4KScales + 16 * s));
          const auto word = static_cast<_MM_PERM_ENUM>(0x55 * (s / 2));
          for (int c = 0; c < C; ++c)
            mn_acc[c] = _mm512_dpwssd_epi32(mn_acc[c], mn, _mm512_shuffle_epi32(b32[c], word));
        }
      }
      const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb)));
      const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + 32)));
      for (int c = 0; c < C; ++c) {
        const __m512 da = _mm512_set1_ps(a[c][b].d);
        acc[c] = _mm512_fmadd_ps(_mm512_mul_ps(d, da), _mm512_add_ps(t0[c], t1[c]), acc[c]);
        accm[c] = _mm512_fmadd_ps(_mm512_mul_ps(dmin, da), _mm512_cvtepi32_ps(mn_acc[c]), accm[c]);
      }
    }
    for (int c = 0; c < C; ++c) acc[c] = _mm512_sub_ps(acc[c], accm[c]);
    store_group(out, out_stride, nrows, g, c0, acc);
  }

  // One column (decode). Each 64-byte load of nibbles feeds both its
  // sub-blocks (low nibbles 2j, high nibbles 2j+1 used in place as 16 x the
  // weight); the sub-block scales multiply the integer dots in integers
  // (vpmulld), so the float work is one convert and FMA per super-block
  // rather than per sub-block. Bounds: a sub-block dot is at most
  // 32 x 15 x 128 = 61440 in magnitude, times a 6-bit scale, times 16 for
  // the high nibbles, summed over 4 sub-blocks: 2.5e8, well inside int32.
  // The mins stay one per sub-block (mins_both_halves): run_few's pair form,
  // faster with the weights in L2, decoded slower from DRAM.
  // This form reads faster than a rolled loop where compute binds (weights
  // in L2, a shared core); from DRAM the two are alike. Its prefetch (and
  // Q6_K's at one column) is non-temporal, which measured faster than T0; a
  // prefetch per 512-byte run, or one much farther ahead, measured slower.
  // Unlike the other one-column tiles it does not touch pages ahead
  // (kernels/prefetch.h): here the touches measured slower.
  // The lean form (kLean, a variant for the planner) loads each nibble line
  // once into a register (in_register) instead of folded into both the and
  // and the andnot, and a sub-block's activation bytes 16 at a time, spread
  // by shuffles, instead of a broadcast load per 4: with the weights in
  // cache the load ports bind this loop and the lean form is much faster;
  // from DRAM, where memory rather than compute binds decode, it measured
  // slower.
  void run_one(int g, int c0) const { run_one_groups<1>(g, c0); }

  // One column over the NG neighbouring groups g.. side by side (NG > 1:
  // P.neighbours, see packed_tiles.h), super-block by super-block.
  template <int NG>
  void run_one_groups(int g, int c0) const {
    static_assert(NG == 1 || (P.every == 0 && P.touch_every == 0), "neighbour streams leave prefetching to the hardware");
    const quant::BlockQ8_K* a[1];
    columns(c0, a);
    __m512 acc[NG], accm[NG];
    for (int i = 0; i < NG; ++i) acc[i] = accm[i] = _mm512_setzero_ps();
    const __m512i lo = _mm512_set1_epi8(0x0F);
    for (int64_t b = 0; b < nsb; ++b) {
      for (int i = 0; i < NG; ++i) {
        const uint8_t* sb = group(g + i) + static_cast<size_t>(b) * kQ4KSuperBytes;
        const quant::BlockQ8_K& ab = a[0][b];
        stream_prefetch<P, kQ4KSuperBytes>(sb, b);
        __m512i even = _mm512_setzero_si512(), odd = _mm512_setzero_si512(), mins = _mm512_setzero_si512();
        _Pragma("GCC unroll 4") for (int j = 0; j < 4; ++j) {
          const uint8_t* run = sb + kQ4KNibbles + 512 * j;
          const int8_t* xe = ab.qs + 64 * j;
          __m512i e0 = _mm512_setzero_si512(), e1 = e0, o0 = e0, o1 = e0;
          if constexpr (kLean) {
            _Pragma("GCC unroll 2") for (int h = 0; h < 2; ++h) {
              // Slices 4h..4h+3 and their activation groups for the low and
              // the high nibbles, one 16-byte load each.
              const __m512i xl = broadcast_16_bytes(xe + 16 * h), xh = broadcast_16_bytes(xe + 32 + 16 * h);
              const uint8_t* q = run + 256 * h;
              __m512i q0 = _mm512_loadu_si512(q), q1 = _mm512_loadu_si512(q + 64);
              __m512i q2 = _mm512_loadu_si512(q + 128), q3 = _mm512_loadu_si512(q + 192);
              in_register(q0), in_register(q1), in_register(q2), in_register(q3);
              e0 = _mm512_dpbusd_epi32(e0, _mm512_and_si512(q0, lo), dword_of<0>(xl));
              e1 = _mm512_dpbusd_epi32(e1, _mm512_and_si512(q1, lo), dword_of<1>(xl));
              o0 = _mm512_dpbusd_epi32(o0, _mm512_andnot_si512(lo, q0), dword_of<0>(xh));
              o1 = _mm512_dpbusd_epi32(o1, _mm512_andnot_si512(lo, q1), dword_of<1>(xh));
              e0 = _mm512_dpbusd_epi32(e0, _mm512_and_si512(q2, lo), dword_of<2>(xl));
              e1 = _mm512_dpbusd_epi32(e1, _mm512_and_si512(q3, lo), dword_of<3>(xl));
              o0 = _mm512_dpbusd_epi32(o0, _mm512_andnot_si512(lo, q2), dword_of<2>(xh));
              o1 = _mm512_dpbusd_epi32(o1, _mm512_andnot_si512(lo, q3), dword_of<3>(xh));
            }
          } else {
            _Pragma("GCC unroll 8") for (int m = 0; m < 8; m += 2) {
              const __m512i q0 = _mm512_loadu_si512(run + 64 * m), q1 = _mm512_loadu_si512(run + 64 * m + 64);
              e0 = _mm512_dpbusd_epi32(e0, _mm512_and_si512(q0, lo), _mm512_set1_epi32(load_i32(xe + 4 * m)));
              e1 = _mm512_dpbusd_epi32(e1, _mm512_and_si512(q1, lo), _mm512_set1_epi32(load_i32(xe + 4 * m + 4)));
              o0 = _mm512_dpbusd_epi32(o0, _mm512_andnot_si512(lo, q0), _mm512_set1_epi32(load_i32(xe + 32 + 4 * m)));
              o1 = _mm512_dpbusd_epi32(o1, _mm512_andnot_si512(lo, q1), _mm512_set1_epi32(load_i32(xe + 36 + 4 * m)));
            }
          }
          const __m512i sce = scales_epi32(sb + kQ4KScales + 32 * j);
          const __m512i sco = scales_epi32(sb + kQ4KScales + 32 * j + 16);
          even = _mm512_add_epi32(even, _mm512_mullo_epi32(_mm512_add_epi32(e0, e1), sce));
          odd = _mm512_add_epi32(odd, _mm512_mullo_epi32(_mm512_add_epi32(o0, o1), sco));
          for (int h = 0; h < 2; ++h)
            mins = _mm512_dpwssd_epi32(mins, mins_both_halves(sb, 2 * j + h),
                                       _mm512_set1_epi32(load_i32(ab.bsums + 4 * j + 2 * h)));
        }
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb)));
        const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + 32)));
        const __m512 da = _mm512_set1_ps(ab.d);
        const __m512i dot = _mm512_add_epi32(even, _mm512_srai_epi32(odd, 4));
        acc[i] = _mm512_fmadd_ps(_mm512_mul_ps(d, da), _mm512_cvtepi32_ps(dot), acc[i]);
        accm[i] = _mm512_fmadd_ps(_mm512_mul_ps(dmin, da), _mm512_cvtepi32_ps(mins), accm[i]);
      }
    }
    for (int i = 0; i < NG; ++i) {
      const __m512 r[1] = {_mm512_sub_ps(acc[i], accm[i])};
      store_group(out, out_stride, nrows, g + i, c0, r);
    }
  }

  template <int C>
  void run(int g, int c0) const {
    run_k_tile<C>(*this, g, c0);
  }
  // One column's neighbour streams (gemm_k_packed).
  static constexpr StreamPrefetch kPrefetch = P;
  template <int NG, int C>
  void run_groups(int g, int c0, int) const {
    static_assert(C == 1);
    run_one_groups<NG>(g, c0);
  }
};

// Q6_K super-blocks (packed.h): per 32 weights, the 8 slice vectors are
// rebuilt from nibble slices and 2-bit slices (unsigned q, value q - 32);
// each sub-block of 16 (4 slices) gets its own integer dot and its row
// scale; the -32 offset is removed once per super-block with the
// activation's sums per 16.
template <StreamPrefetch P = kQ6KOne, bool kLean = false, int Near = kNear, int Far = kFar>
struct Q6KTile : KTile {
  // Up to kUnrollCols columns (decode of a few sequences), the sub-block
  // loop unrolled and with shorter dependency chains and nothing through the
  // stack: two float sums per column (even and odd sub-blocks of 16) instead
  // of one, scales converted where they are used, and the -32 offset summed
  // in integers: row r's scales of sub-blocks 2u and 2u+1 as the two 16-bit
  // halves of lane r make one vpdpwssd against the activation's bsums 2u and
  // 2u+1.
  template <int C>
  void run_few(int g, int c0) const {
    const uint8_t* grp = group(g);
    const quant::BlockQ8_K* a[C];
    columns(c0, a);
    __m512 acc[C];
    for (int c = 0; c < C; ++c) acc[c] = _mm512_setzero_ps();
    const __m512i nib = _mm512_set1_epi8(0x0F), two = _mm512_set1_epi8(0x30);
    for (int64_t b = 0; b < nsb; ++b) {
      const uint8_t* sb = grp + static_cast<size_t>(b) * kQ6KSuperBytes;
      if constexpr (C == 1)
        stream_prefetch<P, kQ6KSuperBytes>(sb, b);
      else
        prefetch_bytes<kQ6KSuperBytes>(sb + (C >= 3 ? Far : Near));
      __m512 t0[C], t1[C];
      __m512i offs[C];
      for (int c = 0; c < C; ++c) t0[c] = t1[c] = _mm512_setzero_ps(), offs[c] = _mm512_setzero_si512();
      _Pragma("GCC unroll 8") for (int u = 0; u < 8; ++u) {
        const int s2 = u % 4;
        __m512i ia[C], ib[C];
        for (int c = 0; c < C; ++c) ia[c] = ib[c] = _mm512_setzero_si512();
        for (int m = 0; m < 8; ++m) {
          const __m512i l = _mm512_loadu_si512(sb + q6k_lo_offset(u / 2, m));
          const __m512i h = _mm512_loadu_si512(sb + q6k_hi_offset(u / 4, m));
          const __m512i low = _mm512_and_si512(u % 2 ? _mm512_srli_epi16(l, 4) : l, nib);
          const __m512i top = s2 == 0 ? _mm512_slli_epi16(h, 4) : s2 == 1 ? _mm512_slli_epi16(h, 2)
                              : s2 == 2 ? h : _mm512_srli_epi16(h, 2);
          const __m512i w = _mm512_ternarylogic_epi32(low, top, two, 0xF8);  // low | (top & 0x30)
          for (int c = 0; c < C; ++c) {
            const __m512i x = _mm512_set1_epi32(load_i32(a[c][b].qs + 32 * u + 4 * (m % 4) + 16 * (m / 4)));
            if (m < 4) ia[c] = _mm512_dpbusd_epi32(ia[c], w, x); else ib[c] = _mm512_dpbusd_epi32(ib[c], w, x);
          }
        }
        const __m128i s0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(sb + 32 + 32 * u));
        const __m128i s1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(sb + 48 + 32 * u));
        const __m512 f0 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(s0)), f1 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(s1));
        // Row r's scales of sub-blocks 2u and 2u+1 as the two int16 halves of
        // lane r, against the activation's bsums 2u and 2u+1.
        const __m512i sw = _mm512_cvtepi8_epi16(_mm256_set_m128i(_mm_unpackhi_epi8(s0, s1), _mm_unpacklo_epi8(s0, s1)));
        for (int c = 0; c < C; ++c) {
          t0[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia[c]), f0, t0[c]);
          t1[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ib[c]), f1, t1[c]);
          offs[c] = _mm512_dpwssd_epi32(offs[c], sw, _mm512_set1_epi32(load_i32(a[c][b].bsums + 2 * u)));
        }
      }
      const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb)));
      for (int c = 0; c < C; ++c) {
        const __m512 v = _mm512_fnmadd_ps(_mm512_set1_ps(32.0f), _mm512_cvtepi32_ps(offs[c]), _mm512_add_ps(t0[c], t1[c]));
        acc[c] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(a[c][b].d)), v, acc[c]);
      }
    }
    store_group(out, out_stride, nrows, g, c0, acc);
  }

  // The lean one-column form (kLean, a variant for the planner; otherwise
  // run_few<1> runs one column): a half's 2-bit line and its two nibble
  // lines are loaded once for the four runs of 32 they hold (run_few<1>
  // loads each nibble line twice and each 2-bit line four times), and a
  // run's activation bytes come as two 16-byte loads rather than eight
  // broadcasts. Faster where the load ports bind (weights in cache); see
  // Q4KTile::run_one on DRAM.
  void run_one(int g, int c0) const
    requires kLean
  {
    run_one_groups<1>(g, c0);
  }

  // The lean form over the NG neighbouring groups g.. side by side (NG > 1:
  // P.neighbours, see packed_tiles.h), super-block by super-block.
  template <int NG>
  void run_one_groups(int g, int c0) const
    requires kLean
  {
    static_assert(NG == 1 || (P.every == 0 && P.touch_every == 0), "neighbour streams leave prefetching to the hardware");
    const quant::BlockQ8_K* a[1];
    columns(c0, a);
    __m512 acc[NG];
    for (int i = 0; i < NG; ++i) acc[i] = _mm512_setzero_ps();
    const __m512i nib = _mm512_set1_epi8(0x0F), two = _mm512_set1_epi8(0x30);
    for (int64_t b = 0; b < nsb; ++b) {
      for (int gi = 0; gi < NG; ++gi) {
        const uint8_t* sb = group(g + gi) + static_cast<size_t>(b) * kQ6KSuperBytes;
        const quant::BlockQ8_K& ab = a[0][b];
        stream_prefetch<P, kQ6KSuperBytes>(sb, b);
        __m512 t0 = _mm512_setzero_ps(), t1 = _mm512_setzero_ps();
        __m512i offs = _mm512_setzero_si512();
        _Pragma("GCC unroll 2") for (int h = 0; h < 2; ++h) {
          // Runs u = 4h..4h+3; ia / ib: their sub-blocks of 16 (slices 0-3, 4-7).
          __m512i ia[4], ib[4], x[4][2];
          for (int i = 0; i < 4; ++i) {
            ia[i] = ib[i] = _mm512_setzero_si512();
            x[i][0] = broadcast_16_bytes(ab.qs + 32 * (4 * h + i));
            x[i][1] = broadcast_16_bytes(ab.qs + 32 * (4 * h + i) + 16);
          }
          _Pragma("GCC unroll 8") for (int m = 0; m < 8; ++m) {
            __m512i l0 = _mm512_loadu_si512(sb + q6k_lo_offset(2 * h, m));
            __m512i l1 = _mm512_loadu_si512(sb + q6k_lo_offset(2 * h + 1, m));
            __m512i hi = _mm512_loadu_si512(sb + q6k_hi_offset(h, m));
            in_register(l0), in_register(l1), in_register(hi);
            const __m512i w[4] = {
                _mm512_ternarylogic_epi32(_mm512_and_si512(l0, nib), _mm512_slli_epi16(hi, 4), two, 0xF8),
                _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(l0, 4), nib), _mm512_slli_epi16(hi, 2), two, 0xF8),
                _mm512_ternarylogic_epi32(_mm512_and_si512(l1, nib), hi, two, 0xF8),
                _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(l1, 4), nib), _mm512_srli_epi16(hi, 2), two, 0xF8)};
            for (int i = 0; i < 4; ++i) {
              const __m512i xv = dword_of(x[i][m / 4], m);
              if (m < 4) ia[i] = _mm512_dpbusd_epi32(ia[i], w[i], xv); else ib[i] = _mm512_dpbusd_epi32(ib[i], w[i], xv);
            }
          }
          for (int i = 0; i < 4; ++i) {
            const int u = 4 * h + i;
            const __m128i s0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(sb + 32 + 32 * u));
            const __m128i s1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(sb + 48 + 32 * u));
            t0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia[i]), _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(s0)), t0);
            t1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ib[i]), _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(s1)), t1);
            const __m512i sw = _mm512_cvtepi8_epi16(_mm256_set_m128i(_mm_unpackhi_epi8(s0, s1), _mm_unpacklo_epi8(s0, s1)));
            offs = _mm512_dpwssd_epi32(offs, sw, _mm512_set1_epi32(load_i32(ab.bsums + 2 * u)));
          }
        }
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb)));
        const __m512 v = _mm512_fnmadd_ps(_mm512_set1_ps(32.0f), _mm512_cvtepi32_ps(offs), _mm512_add_ps(t0, t1));
        acc[gi] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(ab.d)), v, acc[gi]);
      }
    }
    for (int i = 0; i < NG; ++i) {
      const __m512 r[1] = {acc[i]};
      store_group(out, out_stride, nrows, g + i, c0, r);
    }
  }

  template <int C>
  void run(int g, int c0) const {
    run_k_tile<C>(*this, g, c0);
  }
  // One column's neighbour streams (gemm_k_packed).
  static constexpr StreamPrefetch kPrefetch = P;
  template <int NG, int C>
  void run_groups(int g, int c0, int) const {
    static_assert(C == 1);
    run_one_groups<NG>(g, c0);
  }
};

template <class Tile>
void gemm_k_packed(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride, int ncols,
                   float* out, size_t out_stride) {
  const Tile t{{k / 256, static_cast<const uint8_t*>(w), w_stride, nrows, static_cast<const uint8_t*>(act),
                act_stride, out, out_stride}};
  if constexpr (Tile::kPrefetch.neighbours) {
    if (ncols == 1) {
      // kPrefetch.streams neighbouring groups side by side, those left over alone.
      const int ngroups = (nrows + kPackRows - 1) / kPackRows;
      for (int g = for_each_stream_tile<Tile::kPrefetch.streams, 1>(t, 0, ngroups, 0, 1, false); g < ngroups; ++g)
        for_each_col_tile<kColTile>(t, g, 0, 1);
      return;
    }
  }
  drive<kColTile>(t, nrows, ncols);
}

}  // namespace

void gemm_q6_k_packed(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride,
                      int ncols, float* out, size_t out_stride) {
  gemm_k_packed<Q6KTile<>>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}
void gemm_q4_k_packed(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride,
                      int ncols, float* out, size_t out_stride) {
  gemm_k_packed<Q4KTile<>>(k, w, w_stride, nrows, act, act_stride, ncols, out, out_stride);
}

namespace {
// The one-column prefetch schemes other than the default, the lean forms,
// and the tiles of 2-4 columns with one prefetch distance at every width, as
// variants for the planner (kernels/variants.h).
template <class Tile>
constexpr MatmulKernel kKKernel{TensorType::Q8_K, quantize_q8_k, gemm_k_packed<Tile>, nullptr, true};

template <class Tile>
constexpr KernelVariant k_one(const char* name) {
  return {name, Isa::avx512, true, 1, 1, &kKKernel<Tile>};
}
// 2-4 columns (a few sequences decoding together).
template <class Tile>
constexpr KernelVariant k_few(const char* name) {
  return {name, Isa::avx512, true, 2, 4, &kKKernel<Tile>};
}

constexpr KernelVariant kQ4KVariants[] = {
    k_one<Q4KTile<kT0>>("avx512.packed.q4_k.t0"),
    k_one<Q4KTile<kT0FarTouch>>("avx512.packed.q4_k.t0.far.touch"),
    k_one<Q4KTile<kT0Touch>>("avx512.packed.q4_k.t0.touch"),
    k_one<Q4KTile<kT1>>("avx512.packed.q4_k.t1"),
    k_one<Q4KTile<kT1Far>>("avx512.packed.q4_k.t1.far"),
    k_one<Q4KTile<kHw>>("avx512.packed.q4_k.hw"),
    k_one<Q4KTile<kTouch>>("avx512.packed.q4_k.touch"),
    k_one<Q4KTile<kQ4KOne, true>>("avx512.packed.q4_k.lean"),
    k_one<Q4KTile<kNeighbours4Hw>>("avx512.packed.q4_k.4n.hw"),
    k_few<Q4KTile<kQ4KOne, false, kNear, kNear>>("avx512.packed.q4_k.few.near"),
    k_few<Q4KTile<kQ4KOne, false, kFar, kFar>>("avx512.packed.q4_k.few.far"),
};
constexpr KernelVariant kQ6KVariants[] = {
    k_one<Q6KTile<kT0>>("avx512.packed.q6_k.t0"),
    k_one<Q6KTile<kT0FarTouch>>("avx512.packed.q6_k.t0.far.touch"),
    k_one<Q6KTile<kT0Touch>>("avx512.packed.q6_k.t0.touch"),
    k_one<Q6KTile<kT1>>("avx512.packed.q6_k.t1"),
    k_one<Q6KTile<kT1Far>>("avx512.packed.q6_k.t1.far"),
    k_one<Q6KTile<kHw>>("avx512.packed.q6_k.hw"),
    k_one<Q6KTile<kTouch>>("avx512.packed.q6_k.touch"),
    k_one<Q6KTile<kQ6KOne, true>>("avx512.packed.q6_k.lean"),
    k_one<Q6KTile<kNeighbours4Hw, true>>("avx512.packed.q6_k.lean.4n.hw"),
    k_few<Q6KTile<kQ6KOne, false, kNear, kNear>>("avx512.packed.q6_k.few.near"),
    k_few<Q6KTile<kQ6KOne, false, kFar, kFar>>("avx512.packed.q6_k.few.far"),
};
}  // namespace

const KernelVariant* packed_k_decode_variants(TensorType t, int* n) {
  switch (t) {
    case TensorType::Q4_K: return listed(kQ4KVariants, n);
    case TensorType::Q6_K: return listed(kQ6KVariants, n);
    default: *n = 0; return nullptr;
  }
}

}  // namespace brisk::kernels::avx512
