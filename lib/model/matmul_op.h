// SPDX-License-Identifier: MIT
// A threaded matrix multiply over a batch: out[c][r] = W row r · x column c.
// The activations are converted once to the kernel's input format (and the
// conversion is reused when the next matrix reads the same input in the same
// format, as Q/K/V and gate/up do); the rows are then split into one
// contiguous stretch per thread, with stealing at the end (RangeSplit).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "core/tensor_type.h"
#include "model/weights.h"
#include "threads/range_split.h"

namespace brisk {

class ThreadPool;

// Sees the input of every matrix multiply (calibration collects activation
// statistics through it). Called on the thread that runs the forward pass.
class MatmulObserver {
 public:
  virtual ~MatmulObserver() = default;
  virtual void observe(const Matrix& w, const float* x, int64_t x_stride, int ncols) = 0;
};

// One matrix of a multiply that shares its input with others.
struct MatmulJob {
  const Matrix* w;
  float* out;
  int64_t out_stride;
};

class MatmulOp {
 public:
  // Several matrices over the same input in one parallel pass (Q/K/V,
  // gate/up): one barrier instead of one per matrix. `next`: the matrices of
  // the pass that follows (its read-ahead hint; see below), or empty.
  void run(ThreadPool& pool, std::initializer_list<MatmulJob> jobs, const float* x, int64_t x_stride, int ncols,
           std::initializer_list<const Matrix*> next = {});

  void set_observer(MatmulObserver* observer) { observer_ = observer; }

  // x: ncols columns of W.cols floats, x_stride floats apart.
  // out: ncols rows of W.rows floats, out_stride floats apart.
  void run(ThreadPool& pool, const Matrix& w, const float* x, int64_t x_stride, int ncols, float* out,
           int64_t out_stride, std::initializer_list<const Matrix*> next = {});
  // Forget the cached activation conversion (call when x's contents change).
  void invalidate() {
    for (ActBuffer& a : acts_) a.src = nullptr;
  }

 private:
  // Converted activations, one buffer per input format in use (a Q4_K_M
  // model mixes Q8_K and Q8_0 inputs), reused while the input is unchanged.
  using QuantizeFn = void (*)(const float*, void*, int64_t);
  struct ActBuffer {
    std::vector<uint8_t> bytes;
    const float* src = nullptr;
    QuantizeFn quantize = nullptr;  // identifies the format
    int ncols = 0;
    int64_t k = 0;
  };
  const uint8_t* converted(ThreadPool& pool, QuantizeFn quantize, size_t stride, const float* x, int64_t x_stride,
                           int ncols, int64_t k);
  MatmulObserver* observer_ = nullptr;
  ActBuffer acts_[3];
  RangeSplit split_;

  // Read-ahead (ThreadPool::read_ahead_after_next_run): while a pass runs,
  // each worker is told where its first steps of the next pass lie, and
  // reads them once it has no task left, while the calling thread finishes
  // its share and runs the serial work between the passes alone.
  void read_ahead(ThreadPool& pool, std::initializer_list<const Matrix*> next) const;
};

}  // namespace brisk
