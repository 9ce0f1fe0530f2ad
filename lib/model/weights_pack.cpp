// SPDX-License-Identifier: MIT
// Load-time repacking of weight matrices into the kernels' packed layout.
// Each type's copies live in one anonymous buffer advised for transparent
// huge pages (the kernels stream it linearly; 2 MB pages spare the TLB), and
// the file pages they came from are released so the process does not hold
// the weights twice.

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>

#include "core/error.h"
#include "core/huge_pages.h"
#include "core/mapped_file.h"
#include "kernels/packed.h"
#include "model/weights.h"
#include "threads/topology.h"

namespace brisk {

namespace {
size_t groups(const Matrix& m) { return static_cast<size_t>((m.rows + kernels::kPackRows - 1) / kernels::kPackRows); }
size_t packed_size(const Matrix& m) { return groups(m) * kernels::packed_group_bytes(m.type, m.cols); }
}  // namespace

std::vector<Matrix*> Weights::matmul_matrices() {
  std::vector<Matrix*> out;
  if (output.data && (!tied_output || file_reads_back)) out.push_back(&output);
  for (LayerWeights& L : layers)
    for (Matrix* m : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) out.push_back(m);
  return out;
}

void Weights::pack(const std::vector<TensorType>& types, bool release) {
  for (TensorType t : types) {
    std::vector<Matrix*> todo;
    for (Matrix* m : matmul_matrices())
      if (m->type == t && !m->packed && kernels::packable(t, m->cols)) todo.push_back(m);
    if (todo.empty()) continue;
    size_t total = 0;
    std::vector<size_t> offset(todo.size());
    for (size_t i = 0; i < todo.size(); ++i) offset[i] = total, total += packed_size(*todo[i]);
    auto buf = std::make_shared<HugePageBuffer>(total, "the packed weights");
    uint8_t* base = buf->data();
    interleave_across_numa_nodes(base, total);  // before packing touches the pages

    // Packing is a memory-bound copy, and one thread would take about a
    // second for a 1B model: every core packs, pieces of up to kPieceGroups
    // groups taken from a counter (pieces, not matrices, so that one large
    // matrix such as a 150k-row output is shared too). A matrix's file pages
    // are released by whichever thread packs its last piece.
    constexpr size_t kPieceGroups = 64;
    struct Piece {
      size_t matrix, g0, g1;
    };
    std::vector<Piece> pieces;
    std::unique_ptr<std::atomic<size_t>[]> left(new std::atomic<size_t>[todo.size()]);
    for (size_t i = 0; i < todo.size(); ++i) {
      size_t n = 0;
      for (size_t g = 0; g < groups(*todo[i]); g += kPieceGroups, ++n)
        pieces.push_back({i, g, std::min(groups(*todo[i]), g + kPieceGroups)});
      left[i].store(n, std::memory_order_relaxed);
    }
    std::atomic<size_t> next{0};
    auto worker = [&] {
      for (size_t p; (p = next.fetch_add(1)) < pieces.size();) {
        const Piece& piece = pieces[p];
        Matrix* m = todo[piece.matrix];
        const size_t gb = kernels::packed_group_bytes(m->type, m->cols);
        for (size_t g = piece.g0; g < piece.g1; ++g) {
          const int64_t r0 = static_cast<int64_t>(g) * kernels::kPackRows;
          const int nr = static_cast<int>(std::min<int64_t>(kernels::kPackRows, m->rows - r0));
          kernels::pack_row_group(m->type, m->row(r0), m->row_bytes, nr, m->cols, base + offset[piece.matrix] + g * gb);
        }
        if (left[piece.matrix].fetch_sub(1, std::memory_order_acq_rel) == 1 && release)
          release_pages(m->data, m->row_bytes * static_cast<size_t>(m->rows));
      }
    };
    const unsigned n_threads = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
    std::vector<std::thread> threads;
    for (unsigned i = 1; i < n_threads; ++i) threads.emplace_back(worker);
    worker();
    for (std::thread& th : threads) th.join();
    for (size_t i = 0; i < todo.size(); ++i) {
      Matrix* m = todo[i];
      m->file_data = m->data;
      m->data = base + offset[i];
      m->packed = true;
      m->group_bytes = kernels::packed_group_bytes(m->type, m->cols);
    }
    packed_storage.emplace_back(t, std::move(buf));
    packed_bytes += total;
  }
}

void Weights::unpack(TensorType t) {
  for (Matrix* m : matmul_matrices()) {
    if (m->type != t || !m->packed) continue;
    packed_bytes -= packed_size(*m);
    m->data = m->file_data;
    m->file_data = nullptr;
    m->packed = false;
    m->group_bytes = 0;
  }
  packed_storage.erase(std::remove_if(packed_storage.begin(), packed_storage.end(),
                                      [t](const auto& p) { return p.first == t; }),
                       packed_storage.end());
}

void Weights::release_file_pages() {
  for (Matrix* m : matmul_matrices())
    if (m->packed && m->file_data) release_pages(m->file_data, m->row_bytes * static_cast<size_t>(m->rows));
}

}  // namespace brisk
