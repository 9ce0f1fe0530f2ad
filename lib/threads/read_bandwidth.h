// SPDX-License-Identifier: MIT
// Memory read bandwidth as a pool's threads see it: the ceiling that decoding
// (a stream over every weight once per step) is measured against.
#pragma once
#include <cstddef>

namespace brisk {

class ThreadPool;

struct ReadBandwidth {
  double median_gbs = 0, min_gbs = 0, max_gbs = 0;  // 1e9 bytes per second
};

// Reads a fresh buffer of `bytes` (rounded up to a page; it should be much
// larger than the last-level cache) `passes` times in each of four
// patterns, each thread streaming one contiguous share with the active ISA's
// read_sum as two streams, as four, and as one or two with their pages
// touched ahead (as the decode kernels touch theirs), the passes in turns, and
// returns the best pattern's median and the min and max over all passes:
// the host's moment decides which pattern reads fastest. The buffer is first written by the
// threads that later read it (first touch on the reading thread's node) and
// unmapped before returning, so it leaves no trace in the process's memory.
// Throws BRISK_ERR_OUT_OF_MEMORY if it cannot be mapped.
ReadBandwidth measure_read_bandwidth(ThreadPool& pool, size_t bytes, int passes);

}  // namespace brisk
