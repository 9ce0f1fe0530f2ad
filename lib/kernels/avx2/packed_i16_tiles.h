// SPDX-License-Identifier: MIT
// Packed F16/BF16 weights against "I16" activations (packed.h): prompt
// kernels that multiply in int16 where AVX2 has no bf16 dot product. Shared
// by the plain AVX2 file (vpmaddwd then vpaddd) and the AVX-VNNI one
// (vpdpwssd): the Dot policy is the one difference. AVX2 files only (see
// common.h on why these helpers stay internal).
//
// A group's weights are converted kI16ChunkBlocks blocks at a time into a
// buffer on the stack (I16Chunk): each 64-byte line (16 rows x one pair of
// values) becomes 16 rows x a pair of int16, the same shape, so one 32-byte
// load is 8 rows' pairs and vpmaddwd against the column's pair of int16
// activations (broadcast as one 32-bit element) gives each row's two
// products summed. Every column of the pass then runs over the chunk
// (tiles of up to 3 columns, both halves of the group: 12 accumulators),
// so the conversion is paid once per chunk for all of them; the chunk's
// sums go to the output, added to the earlier chunks'.
#pragma once
#include "kernels/avx2/packed_tiles.h"

namespace brisk::kernels::avx2 {
namespace {

struct I16Chunk {
  alignas(64) int16_t q[kI16ChunkBlocks][kI16Block / 2][2 * kPackRows];  // [block][pair][row r's pair at 2r]
  alignas(64) float scale[kI16ChunkBlocks][kPackRows];                   // max|w| / 32767 per block and row
};

// Converts one block of a group (npairs <= 16 lines from `lines`) into
// q[16][32] and scale[16] as packed.h defines: per row, the largest |w| of
// the block m, then w x (32767 / m) rounded to nearest even.
template <typename L>
__attribute__((always_inline)) inline void convert_block(const uint8_t* lines, int npairs, int16_t (*q)[2 * kPackRows],
                                                         float* scale) {
  const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  __m256 mx[4];
  for (int h = 0; h < 4; ++h) mx[h] = _mm256_setzero_ps();
  for (int p = 0; p < npairs; ++p)
    for (int h = 0; h < 4; ++h) mx[h] = _mm256_max_ps(mx[h], _mm256_and_ps(L::quarter(lines + 64 * p + 16 * h), absmask));
  // Quarter h holds rows 4h..4h+3, two lanes each: the row's maximum in both.
  __m256 inv[4];
  const __m256 wmax = _mm256_set1_ps(kI16WeightMax);
  const __m256i even = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
  for (int h = 0; h < 4; ++h) {
    const __m256 m = _mm256_max_ps(mx[h], _mm256_permute_ps(mx[h], 0xB1));
    const __m256 nz = _mm256_cmp_ps(m, _mm256_setzero_ps(), _CMP_GT_OQ);
    inv[h] = _mm256_and_ps(_mm256_div_ps(wmax, m), nz);
    const __m256 s = _mm256_div_ps(m, wmax);
    _mm_storeu_ps(scale + 4 * h, _mm256_castps256_ps128(_mm256_permutevar8x32_ps(s, even)));
  }
  for (int p = 0; p < npairs; ++p)
    for (int half = 0; half < 2; ++half) {
      const __m256i a = _mm256_cvtps_epi32(_mm256_mul_ps(L::quarter(lines + 64 * p + 32 * half), inv[2 * half]));
      const __m256i b = _mm256_cvtps_epi32(_mm256_mul_ps(L::quarter(lines + 64 * p + 32 * half + 16), inv[2 * half + 1]));
      // packs interleaves the 128-bit lanes (rows 0 1 4 5 | 2 3 6 7); the permute restores the order.
      _mm256_store_si256(reinterpret_cast<__m256i*>(q[p] + 16 * half),
                         _mm256_permute4x64_epi64(_mm256_packs_epi32(a, b), 0xD8));
    }
  for (int p = npairs; p < kI16Block / 2; ++p) std::memset(q[p], 0, sizeof(q[p]));
}

// Columns [c0, c0 + C) over one converted chunk (blocks b0 .. b0 + nb - 1
// of the row) of group g. first: the chunk's sums are stored, else added.
template <class Dot>
struct I16ChunkTile {
  const I16Chunk& ch;
  int64_t b0;
  int nb;
  bool first;
  const uint8_t* act;
  size_t act_stride;
  size_t values_off;
  int nrows;
  float* out;
  size_t out_stride;

  template <int C>
  void run(int g, int c0) const {
    const float* xd[C];
    const int16_t* xq[C];
    for (int c = 0; c < C; ++c) {
      const uint8_t* col = act + static_cast<size_t>(c0 + c) * act_stride;
      xd[c] = reinterpret_cast<const float*>(col) + b0;
      xq[c] = reinterpret_cast<const int16_t*>(col + values_off) + b0 * kI16Block;
    }
    __m256 acc[2][C];
    for (int h = 0; h < 2; ++h)
      for (int c = 0; c < C; ++c) acc[h][c] = _mm256_setzero_ps();
    for (int b = 0; b < nb; ++b) {
      __m256i dot[2][C];
      for (int h = 0; h < 2; ++h)
        for (int c = 0; c < C; ++c) dot[h][c] = _mm256_setzero_si256();
      for (int p = 0; p < kI16Block / 2; ++p) {
        const __m256i w0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(ch.q[b][p]));
        const __m256i w1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(ch.q[b][p] + 16));
        for (int c = 0; c < C; ++c) {
          const __m256i x = _mm256_set1_epi32(load_i32(xq[c] + kI16Block * b + 2 * p));
          dot[0][c] = Dot::add(dot[0][c], w0, x);
          dot[1][c] = Dot::add(dot[1][c], w1, x);
          keep(dot[0][c]);
          keep(dot[1][c]);
        }
      }
      for (int h = 0; h < 2; ++h) {
        const __m256 ws = _mm256_load_ps(ch.scale[b] + 8 * h);
        for (int c = 0; c < C; ++c)
          acc[h][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[h][c]), _mm256_mul_ps(ws, _mm256_set1_ps(xd[c][b])),
                                      acc[h][c]);
      }
    }
    for (int c = 0; c < C; ++c)
      for (int h = 0; h < 2; ++h) {
        const int row = g * kPackRows + 8 * h, valid = nrows - row;
        if (valid <= 0) continue;
        float* o = out + static_cast<size_t>(c0 + c) * out_stride + static_cast<size_t>(row);
        __m256 v = acc[h][c];
        if (!first) {
          if (valid >= 8) {
            v = _mm256_add_ps(_mm256_loadu_ps(o), v);
          } else {
            const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(valid), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
            v = _mm256_add_ps(_mm256_maskload_ps(o, mask), v);
          }
        }
        store_rows(o, valid, v);
      }
  }
};

// The gemm: per row group, per chunk, convert, then every column in tiles of up to 3.
template <typename L, class Dot>
void gemm_i16_packed(int64_t k, const void* w, size_t w_stride, int nrows, const void* act, size_t act_stride,
                     int ncols, float* out, size_t out_stride) {
  const int64_t npairs = k / 2, nblocks = i16_blocks(k);
  const int ngroups = (nrows + kPackRows - 1) / kPackRows;
  I16Chunk ch;
  for (int g = 0; g < ngroups; ++g) {
    const uint8_t* grp = static_cast<const uint8_t*>(w) + static_cast<size_t>(g) * w_stride;
    for (int64_t b0 = 0; b0 < nblocks; b0 += kI16ChunkBlocks) {
      const int nb = static_cast<int>(nblocks - b0 < kI16ChunkBlocks ? nblocks - b0 : kI16ChunkBlocks);
      for (int b = 0; b < nb; ++b) {
        const int64_t p0 = (b0 + b) * (kI16Block / 2);
        const int np = static_cast<int>(npairs - p0 < kI16Block / 2 ? npairs - p0 : kI16Block / 2);
        convert_block<L>(grp + 64 * static_cast<size_t>(p0), np, ch.q[b], ch.scale[b]);
      }
      const I16ChunkTile<Dot> t{ch,  b0,    nb, b0 == 0, static_cast<const uint8_t*>(act), act_stride,
                                packed_i16_act_offset(k), nrows, out, out_stride};
      for_each_col_tile<6>(t, g, 0, ncols);
    }
  }
}

}  // namespace
}  // namespace brisk::kernels::avx2
