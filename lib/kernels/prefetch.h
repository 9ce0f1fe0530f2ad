// SPDX-License-Identifier: MIT
// Software prefetch of weight streams, shared by the SIMD kernels. SSE
// intrinsics only, so a file of any ISA may include it; everything here is
// `static` (see avx512/common.h on the ODR caution), so each file keeps its
// own copy, compiled with its own flags.
#pragma once
#include <xmmintrin.h>

#include <cstddef>
#include <cstdint>

namespace brisk::kernels {

constexpr size_t kPageBytes = 4096;

// The hint's type: GCC's enum _mm_hint, clang's plain int (its _MM_HINT_*
// are int macros), so the templates below compile with both.
using PrefetchHint = decltype(_MM_HINT_T0);

// Called in every loop of prefetches. GCC counts a prefetch as free of side
// effects, so it may delete a loop that does nothing else (it did, in every
// AVX2 packed K-quant tile); an empty volatile asm is a side effect it must
// keep, and it constrains nothing else: no instruction, no clobber.
static inline void keep_prefetch_loop() { asm volatile(""); }

// How far beyond each prefetched range its pages are touched.
//
// Why touch pages at all: a weight stream that its prefetches keep ahead of
// the loads still stalls where it enters a new 4 KiB page, most likely on the
// address translation (under a hypervisor a TLB miss is a nested page walk,
// and neither the hardware prefetchers nor, it seems, a burst of software
// prefetches run ahead across it). One prefetch into a page well before the
// stream gets there takes that walk early (the weights sit on 2 MB pages in
// the guest, but the host may map guest memory in 4 KiB pages). Decode
// measured faster with the touches (Q4_K's one-column tile goes without,
// matmul_packed.cpp); the distance and hint matter little as long as the
// touch lands several pages ahead. Plain reads gain little from it: their
// loads run far enough ahead out of order to start the walks.
constexpr size_t kPageAheadBytes = 32768;

// Touches (prefetches one line of, into L2) every page that starts in
// [p + kPageAheadBytes, p + kPageAheadBytes + bytes). A stream whose
// prefetches cover it contiguously thus touches each of its pages once,
// kPageAheadBytes before prefetching it. Prefetches never fault, so pages
// past the end of a matrix (or of any mapping) are harmless.
static inline void touch_pages_ahead(const uint8_t* p, size_t bytes) {
  const uintptr_t from = reinterpret_cast<uintptr_t>(p) + kPageAheadBytes;
  for (uintptr_t page = (from + kPageBytes - 1) & ~uintptr_t{kPageBytes - 1}; page < from + bytes; page += kPageBytes) {
    _mm_prefetch(reinterpret_cast<const char*>(page), _MM_HINT_T2);
    keep_prefetch_loop();
  }
}

// Bytes ahead of the current weight position that the row-major kernels
// prefetch: a few KB in decode, the next row groups otherwise (see below).
static inline size_t prefetch_distance(int ncols, size_t w_stride) {
  return ncols == 1 ? size_t{4096} : 8 * w_stride;
}

// Prefetches the cache lines of [p, p + Bytes). Decode (one column) walks
// the rows one after another, a single linear stream that the hardware
// prefetcher follows well; reading 2 or 4 rows side by side instead cut
// DRAM throughput (rows of a few KB are too short for per-stream training).
// The software prefetch a few KB ahead covers stream starts and page
// crossings. Multi-column tiles read R rows side by side and prefetch the
// next row groups. Prefetches past the end of the matrix are harmless.
// The loop is left rolled on purpose: fully unrolled, kernels ran faster
// with weights in L2 but decoded slower from DRAM. The loop seems to pace
// the prefetches so that they do not crowd out the demand loads.
template <int Bytes, PrefetchHint Hint = _MM_HINT_T0>
static inline void prefetch_bytes(const uint8_t* p) {
  for (int o = 0; o < Bytes; o += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(p + o), Hint);
    keep_prefetch_loop();
  }
  if (Bytes % 64 != 0) _mm_prefetch(reinterpret_cast<const char*>(p + Bytes - 1), Hint);
}

// prefetch_bytes plus touch_pages_ahead over the same bytes: for a one-column
// (decode) tile, which reads a single stream as fast as memory allows.
// Tiles of 2-16 columns, which read one stream more slowly or several side
// by side, do not touch pages by default: there the touches measured slower,
// so only C == 1 gets them (except Q4_K's, see Q4KTile::run_one). The
// planner may still pick a few-column variant that does (variants.h).
template <int Bytes, PrefetchHint Hint = _MM_HINT_T0>
static inline void prefetch_stream_bytes(const uint8_t* p) {
  prefetch_bytes<Bytes, Hint>(p);
  touch_pages_ahead(p, Bytes);
}

// The weight prefetch of a C-column tile that reads one stream: page touches
// for decode only (see prefetch_stream_bytes).
template <int C, int Bytes, PrefetchHint Hint = _MM_HINT_T0>
static inline void prefetch_weights(const uint8_t* p) {
  if constexpr (C == 1)
    prefetch_stream_bytes<Bytes, Hint>(p);
  else
    prefetch_bytes<Bytes, Hint>(p);
}

}  // namespace brisk::kernels
