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
  std::vector<double> gbs;
  for (int p = 0; p < passes; ++p) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(n, [&](int64_t t, int) { sums[static_cast<size_t>(t)] += vk.read_sum(base + t * share, share); });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    gbs.push_back(static_cast<double>(total) / s / 1e9);
  }
  // The sums are data the reads produced; checking them keeps the reads
  // honest (and cannot fail: every byte of share t is t + 1).
  for (int t = 0; t < n; ++t) {
    uint64_t word;
    std::memset(&word, t + 1, sizeof word);
    if (sums[static_cast<size_t>(t)] != word * (share / 8) * static_cast<uint64_t>(passes))
      fail(BRISK_ERR_INTERNAL, "read bandwidth: the buffer did not read back as written");
  }
  std::sort(gbs.begin(), gbs.end());
  ReadBandwidth r;
  r.median_gbs = gbs.size() % 2 ? gbs[gbs.size() / 2] : 0.5 * (gbs[gbs.size() / 2 - 1] + gbs[gbs.size() / 2]);
  r.min_gbs = gbs.front();
  r.max_gbs = gbs.back();
  return r;
}

}  // namespace brisk
