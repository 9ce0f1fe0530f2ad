// SPDX-License-Identifier: MIT
// Load-time repacking of weight matrices into the kernels' packed layout.
// The copy lives in anonymous memory advised for transparent huge pages (the
// kernels stream it linearly; 2 MB pages spare the TLB), and the file pages it
// came from are released so the process does not hold the weights twice.

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/huge_pages.h"
#include "core/mapped_file.h"
#include "kernels/matmul.h"
#include "kernels/packed.h"
#include "model/weights.h"
#include "threads/topology.h"

namespace brisk {

namespace {

bool packing_disabled() {
  const char* env = std::getenv("BRISK_REPACK");
  return env && std::strcmp(env, "0") == 0;
}

}  // namespace

void Weights::pack_for_kernels() {
  if (packing_disabled()) return;
  std::vector<Matrix*> todo;
  auto consider = [&](Matrix& m) {
    if (m.packed || !kernels::packable(m.type, m.cols) || !kernels::packed_matmul_kernel(m.type)) return;
    if (m.data == token_embd.data) return;  // tied to the embeddings, which are read by row
    todo.push_back(&m);
  };
  consider(output);
  for (LayerWeights& L : layers)
    for (Matrix* m : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) consider(*m);
  if (todo.empty()) return;

  auto groups = [](const Matrix& m) { return static_cast<size_t>((m.rows + kernels::kPackRows - 1) / kernels::kPackRows); };
  size_t total = 0;
  for (const Matrix* m : todo) total += groups(*m) * kernels::packed_group_bytes(m->type, m->cols);
  auto buf = std::make_shared<HugePageBuffer>(total, "the packed weights");
  uint8_t* base = buf->data();
  interleave_across_numa_nodes(base, total);  // before packing touches the pages

  // Destinations first, then the packing itself on every core (matrices
  // taken from a shared counter): packing is a memory-bound copy, and one
  // thread would take about a second for a 1B model.
  std::vector<uint8_t*> dst(todo.size());
  size_t off = 0;
  for (size_t i = 0; i < todo.size(); ++i) {
    dst[i] = base + off;
    off += groups(*todo[i]) * kernels::packed_group_bytes(todo[i]->type, todo[i]->cols);
  }
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < todo.size();) {
      Matrix* m = todo[i];
      const size_t gb = kernels::packed_group_bytes(m->type, m->cols);
      for (size_t g = 0; g < groups(*m); ++g) {
        const int64_t r0 = static_cast<int64_t>(g) * kernels::kPackRows;
        const int nr = static_cast<int>(std::min<int64_t>(kernels::kPackRows, m->rows - r0));
        kernels::pack_row_group(m->type, m->row(r0), m->row_bytes, nr, m->cols, dst[i] + g * gb);
      }
      release_pages(m->data, m->row_bytes * static_cast<size_t>(m->rows));
    }
  };
  const unsigned n_threads = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < n_threads; ++t) threads.emplace_back(worker);
  worker();
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < todo.size(); ++i) {
    Matrix* m = todo[i];
    m->data = dst[i];
    m->packed = true;
    m->group_bytes = kernels::packed_group_bytes(m->type, m->cols);
  }
  packed_storage = std::move(buf);
  packed_bytes = total;
}

}  // namespace brisk
