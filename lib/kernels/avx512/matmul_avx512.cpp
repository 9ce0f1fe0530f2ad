// avx512 matrix kernels. Types not listed fall back to the next lower ISA.
#include "kernels/isa_tables.h"

namespace brisk::kernels {

const MatmulKernel* avx512_matmul_kernel(TensorType) { return nullptr; }

}  // namespace brisk::kernels
