// SPDX-License-Identifier: MIT
#include "threads/read_bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/huge_pages.h"
#include "kernels/vec.h"
#include "threads/thread_pool.h"

namespace brisk {

ReadBandwidth measure_read_bandwidth(ThreadPool& pool, size_t bytes, int passes) {
  if (bytes == 0 || passes <= 0) fail(BRISK_ERR_INVALID_ARGUMENT, "read bandwidth: need bytes > 0 and passes > 0");
  constexpr size_t kPage = 4096;
  const int n = pool.size();
  // Shares of whole pages, so no two threads touch one page.
  const size_t share = (bytes + n * kPage - 1) / (n * kPage) * kPage;
  const size_t total = share * n;
  // Memory like the repacked weights' (model/weights_pack.cpp), so the
  // ceiling is not lowered by TLB misses the weights do not have.
  const HugePageBuffer buf(total, "the read-bandwidth buffer");
  uint8_t* base = buf.data();
  pool.parallel_for(n, [&](int64_t t, int) { std::memset(base + t * share, static_cast<int>(t + 1), share); });

  const kernels::VecKernels& vk = kernels::vec_kernels();
  std::vector<uint64_t> sums(static_cast<size_t>(n));
  // Four read patterns in turns (kernels/vec.h, read_sum: two or four
  // streams per thread, and one or two with their pages touched ahead as
  // the decode kernels touch theirs); which one is fastest changes with the
  // host's moment.
  struct Pattern {
    int streams;
    bool touch_pages;
  };
  constexpr Pattern kPatterns[] = {{2, false}, {4, false}, {2, true}, {1, true}};
  constexpr int kNumPatterns = sizeof kPatterns / sizeof kPatterns[0];
  std::vector<double> gbs[kNumPatterns];
  for (int p = 0; p < kNumPatterns * passes; ++p) {
    const Pattern& pat = kPatterns[p % kNumPatterns];
    const auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(n, [&](int64_t t, int) {
      sums[static_cast<size_t>(t)] += vk.read_sum(base + t * share, share, pat.streams, pat.touch_pages);
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    gbs[p % kNumPatterns].push_back(static_cast<double>(total) / s / 1e9);
  }
  // The sums are data the reads produced; checking them keeps the reads
  // honest (and cannot fail: every byte of share t is t + 1).
  for (int t = 0; t < n; ++t) {
    uint64_t word;
    std::memset(&word, t + 1, sizeof word);
    if (sums[static_cast<size_t>(t)] != word * (share / 8) * kNumPatterns * static_cast<uint64_t>(passes))
      fail(BRISK_ERR_INTERNAL, "read bandwidth: the buffer did not read back as written");
  }
  // The best pattern's median, and min / max over all.
  ReadBandwidth r;
  r.min_gbs = 1e300;
  for (std::vector<double>& g : gbs) {
    std::sort(g.begin(), g.end());
    const double median = g.size() % 2 ? g[g.size() / 2] : 0.5 * (g[g.size() / 2 - 1] + g[g.size() / 2]);
    r.median_gbs = std::max(r.median_gbs, median);
    r.min_gbs = std::min(r.min_gbs, g.front());
    r.max_gbs = std::max(r.max_gbs, g.back());
  }
  return r;
}

}  // namespace brisk
