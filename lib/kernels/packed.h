// SPDX-License-Identifier: MIT
// Interleaved ("packed") weight layout for Q4_0, Q8_0, Q4_K, Q6_K, F16 and
// BF16, made once at load so the SIMD kernels read one contiguous stream and
// one activation load feeds 16 rows.
//
// Why: in the row-major GGUF layout a kernel that wants several rows per
// activation load must read several streams side by side, and every block
// needs shuffles to bring its nibbles and scale into place. Packed, a group of
// 16 rows stores, per block, the 16 scales together and then the weights as
// 4-byte slices, slice m of row r at 32-bit slot r of vector m. One
// `vpdpbusd` with the activation's 4 bytes broadcast to every slot then
// advances all 16 rows' dot products at once, and the float work (convert,
// scale, accumulate) happens once per block for 16 rows instead of per row.
//
// Group of rows [16g, 16g + 16), k values per row, nb = k / 32 blocks, taken
// two blocks at a time ("a pair"; an odd last block is paired with zeros):
//   pair p at byte p * pair_bytes:
//     [0, 32)   16 fp16 scales of block 2p, row r at bytes 2r
//     [32, 64)  16 fp16 scales of block 2p + 1
//     [64, ...) the weights of block 2p, then of block 2p + 1, each
//               slices * 64 bytes: slice m, row r at byte 64m + 4r.
// Q4_0 (4 slices): slice m holds bytes qs[4m..4m+3] of the block, so its low
//   nibbles are weights 4m..4m+3 and its high nibbles weights 16+4m..16+4m+3.
// Q8_0 (8 slices): slice m holds weights 4m..4m+3 plus 128, as unsigned bytes
//   (the form vpdpbusd multiplies; the offset is removed with the activation
//   sums, see below).
// Rows past the matrix's last row are zero (scale 0), so a partial last group
// computes garbage-free zeros that the kernels do not store. Sizes match the
// GGUF layout exactly for an even block count: packing costs no memory.
//
// Q4_K (256-weight super-blocks of 8 sub-blocks of 32, against Q8_K
// activations): per super-block, kQ4KSuperBytes bytes:
//   [0, 32) 16 fp16 d; [32, 64) 16 fp16 dmin;
//   [64, 192) sub-block s row r at 64 + 16s + r: the 6-bit scale in bits
//   0-5, the top 2 bits of the 6-bit min in bits 6-7;
//   [192, 256) the mins' low 4 bits, sub-blocks 2j and 2j + 1 of row r as
//   the low and high nibble of byte 192 + 16j + r;
//   [256, 2304) the nibbles: GGUF's 32-byte runs j = 0..3 (low nibbles
//   sub-block 2j, high nibbles 2j+1), slice m of run j, row r at
//   256 + 512j + 64m + 4r.
//   (The same size as GGUF's. Whole-byte scales and mins would be more to
//   read per token, and decode is bound by the reads, not by the few more
//   instructions that split the bits.)
//
// Q6_K (16 sub-blocks of 16 with int8 scales, against Q8_K): weights as
// unsigned 6-bit q (value q - 32), per super-block kQ6KSuperBytes bytes:
//   [0, 32) 16 fp16 d; [32, 288) the scales, sub-block s row r at 32 + 16s + r;
//   [288, 3360) the weights, in 16 chunks of 192 bytes, chunk 8h + m (half
//   h = 0, 1 of the super-block, slice m = 0..7) at 288 + 192 (8h + m):
//     [0, 64) high 2 bits: row r byte i at 4r + i, bits 2s..2s+1 for
//       weight 128h + 32s + 4m + i (s = 0..3);
//     [64, 128) and [128, 192) the low nibbles of runs j = 2h and 2h + 1:
//       row r byte i at 4r + i, weight 64j + 4m + i in the low nibble and
//       64j + 32 + 4m + i in the high one.
//   Each chunk holds all the bits of its 32 weights per row, so a super-block
//   is read from one 3 KB stretch in chunk order (q6k_hi_offset,
//   q6k_lo_offset), which reads faster than two planes kept apart;
//   run_few<1> reads it at one column, measured faster than a dedicated
//   one-column loop.
//   (The same size as GGUF's.)
//
// F16 and BF16 (rows of even length), 2 bytes per weight like GGUF: value
//   pair p (weights 2p, 2p+1) of row r at byte 64p + 4r, the pair's first
//   value in the low half. One 64-byte load is 16 rows x 2 values: F16C
//   widens it to two f32 vectors for exact FMAs against a broadcast pair of
//   activations, or vcvtne2ps2bf16 / the BF16 bits themselves give 32-bit
//   lanes ready for vdpbf16ps.
//   Against fewer than kPackedFloatBatchCols activation columns (decode and
//   small batches, memory-bound) the kernels compute exactly as the row-major
//   ones: weights widened to f32, f32 activations, f32 sums. From
//   kPackedFloatBatchCols columns on (prompt chunks, compute-bound) weights
//   and activations are rounded to bfloat16 and multiplied with vdpbf16ps
//   (f32 accumulation): well above the f32 FMA rate, with the precision bf16
//   models are trained in (8 significant bits per factor, f32 sums).
//   Activation columns ("F32 + BF16") carry both forms: k floats, then, from
//   the next 64-byte boundary, the k values rounded to bf16 (round to nearest
//   even, subnormals to zero, as vcvtneps2bf16).
//   Where no bf16 dot product exists (AVX2), prompt kernels may multiply in
//   integers instead ("I16", variants named .i16): per block of 32 values,
//   each row's weights become int16 (w x 32767 / max|w| of the row's block,
//   rounded to nearest even) with the float scale max|w| / 32767, converted
//   as the kernel goes (kI16ChunkBlocks blocks of a group at a time), and the
//   activations 12-bit integers (x x 2047 / max|x|) with scale max|x| / 2047.
//   Each block's dot is exact in int32 (32 x 32767 x 2047 < 2^31), then
//   scaled and summed in float: fmaf over the blocks of a chunk, the
//   chunks' sums added in order. More precise than bf16 (about 2^-12 of the
//   block's largest activation and 2^-16 of its largest weight per value),
//   and vpmaddwd (vpdpwssd) does 16 products per instruction to an FMA's 8.
//   Activation columns: ceil(k / 32) float scales, then from the next 64-byte
//   boundary the int16 values, the last block padded with zeros.
//
// Activations for packed Q4_0/Q8_0 kernels ("Q8_0 with sums"): a column is its nb Q8_0
// blocks as ggml makes them, then, from the next 64-byte boundary, nb floats
// (each block's scale, widened) and nb int32 (each block's sum of qs). The
// kernels subtract 8 x sum (Q4_0) or 128 x sum (Q8_0) per block to undo the
// unsigned weight offset.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/tensor_type.h"

namespace brisk::kernels {

constexpr int kPackRows = 16;
constexpr size_t kQ4KSuperBytes = 2304;
constexpr size_t kQ4KScales = 64;     // scale s (and min s's top bits) of row r at + 16s + r
constexpr size_t kQ4KMinsLow = 192;   // min 2j, 2j + 1 low bits of row r at + 16j + r
constexpr size_t kQ4KNibbles = 256;   // run j, slice m of row r at + 512j + 64m + 4r
constexpr size_t kQ6KSuperBytes = 3360;
// Byte offsets in a packed Q6_K super-block of slice m (0..7) of the 2-bit
// plane of half h (0, 1) and of the nibble run j (0..3).
constexpr size_t q6k_hi_offset(int h, int m) { return 288 + 192 * static_cast<size_t>(8 * h + m); }
constexpr size_t q6k_lo_offset(int j, int m) { return q6k_hi_offset(j / 2, m) + 64 + 64 * static_cast<size_t>(j % 2); }
constexpr int kPackedFloatBatchCols = 32;
// From this many columns the AMX tables (kernels/amx/) multiply tiles of
// bf16; below it they call the AVX-512 packed kernels.
constexpr int kAmxMinCols = 24;

// True for the weight types that have a packed layout (Q4_0, Q8_0, Q4_K,
// Q6_K, F16, BF16), and with k, for a matrix of rows of k values.
bool packable(TensorType t);
bool packable(TensorType t, int64_t k);
// Bytes of one 16-row group of a packed matrix with k values per row.
size_t packed_group_bytes(TensorType t, int64_t k);
// Packs rows [0, nrows) (nrows <= 16) of row-major GGUF data into one group.
void pack_row_group(TensorType t, const uint8_t* rows, size_t row_stride, int nrows, int64_t k, uint8_t* group);
// The inverse, for rows [0, nrows) of a group (tests, and reading one row).
void unpack_row_group(TensorType t, const uint8_t* group, int nrows, int64_t k, uint8_t* rows, size_t row_stride);

// The "Q8_0 with sums" activation format.
size_t q8_0_sums_bytes(int64_t k);
size_t q8_0_sums_offset(int64_t k);  // where the float scales start
void quantize_q8_0_sums_ref(const float* x, void* out, int64_t k);

// The "F32 + BF16" activation format of packed F16/BF16 weights.
bool packed_float_type(TensorType t);  // F16 or BF16
size_t packed_float_act_bytes(int64_t k);
size_t packed_float_act_offset(int64_t k);  // where the bf16 values start
uint16_t bf16_batch_round(float x);         // f32 -> bf16 as vcvtneps2bf16
void quantize_packed_float_act_ref(const float* x, void* out, int64_t k);
void pack_float_row_group(const uint8_t* rows, size_t row_stride, int nrows, int64_t k, uint8_t* group);
// Value i of row r (< 16) of a packed F16 / BF16 group, widened.
float packed_float_value(TensorType t, const uint8_t* group, int r, int64_t i);

// The "I16" form of packed F16/BF16 products (above).
constexpr int kI16Block = 32;
constexpr int kI16ChunkBlocks = 8;
constexpr float kI16WeightMax = 32767.0f;
constexpr float kI16ActMax = 2047.0f;
constexpr int64_t i16_blocks(int64_t k) { return (k + kI16Block - 1) / kI16Block; }
size_t packed_i16_act_bytes(int64_t k);
size_t packed_i16_act_offset(int64_t k);  // where the int16 values start
void quantize_packed_i16_act_ref(const float* x, void* out, int64_t k);
void unpack_float_row_group(const uint8_t* group, int nrows, int64_t k, uint8_t* rows, size_t row_stride);

// Scalar reference gemms over packed weights (the contract of matmul.h with
// w = first row group and w_stride = bytes per group). Ground truth for the
// SIMD versions and the fallback when no SIMD version exists.
void gemm_q4_0_packed_ref(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
                          size_t act_stride, int ncols, float* out, size_t out_stride);
void gemm_q4_k_packed_ref(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
                          size_t act_stride, int ncols, float* out, size_t out_stride);
void gemm_q6_k_packed_ref(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
                          size_t act_stride, int ncols, float* out, size_t out_stride);
void gemm_q8_0_packed_ref(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
                          size_t act_stride, int ncols, float* out, size_t out_stride);
void gemm_f16_packed_ref(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
                         size_t act_stride, int ncols, float* out, size_t out_stride);
void gemm_bf16_packed_ref(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
                          size_t act_stride, int ncols, float* out, size_t out_stride);
void gemm_f16_packed_i16_ref(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
                             size_t act_stride, int ncols, float* out, size_t out_stride);
void gemm_bf16_packed_i16_ref(int64_t k, const void* w, size_t w_stride, int nrows, const void* act,
                              size_t act_stride, int ncols, float* out, size_t out_stride);

}  // namespace brisk::kernels
