// A threaded matrix multiply over a batch: out[c][r] = W row r · x column c.
// The activations are converted once to the kernel's input format (and the
// conversion is reused when the next matrix reads the same input in the same
// format, as Q/K/V and gate/up do); rows are then split into small tasks that
// the pool hands out dynamically.
#pragma once
#include <cstdint>
#include <vector>

#include "core/tensor_type.h"
#include "model/weights.h"

namespace brisk {

class ThreadPool;

// Sees the input of every matrix multiply (calibration collects activation
// statistics through it). Called on the thread that runs the forward pass.
class MatmulObserver {
 public:
  virtual ~MatmulObserver() = default;
  virtual void observe(const Matrix& w, const float* x, int64_t x_stride, int ncols) = 0;
};

class MatmulOp {
 public:
  void set_observer(MatmulObserver* observer) { observer_ = observer; }

  // x: ncols columns of W.cols floats, x_stride floats apart.
  // out: ncols rows of W.rows floats, out_stride floats apart.
  void run(ThreadPool& pool, const Matrix& w, const float* x, int64_t x_stride, int ncols, float* out,
           int64_t out_stride);
  // Forget the cached activation conversion (call when x's contents change).
  void invalidate() { cached_src_ = nullptr; }

 private:
  MatmulObserver* observer_ = nullptr;
  std::vector<uint8_t> act_;  // converted activations
  const float* cached_src_ = nullptr;
  TensorType cached_type_ = TensorType::F32;
  int cached_ncols_ = 0;
  int64_t cached_k_ = 0;
};

}  // namespace brisk
