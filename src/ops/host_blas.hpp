// CBLAS gemm on host buffers, shared by the operators that multiply dense blocks (MatrixMult,
// Fredholm1, MDC). The device counterpart is device_gemm (ops/device_blas.hpp).
#pragma once

#include <cstdint>

#include "core/dtype.hpp"

namespace plm::ops {

// C (rows x cols) = op(A) B, or += when accumulate; row-major, B and C contiguous. op(A) is A
// (rows x inner) or, with adjoint, A^H of an (inner x rows) A; lda is A's row stride. Sizes fit
// an int (CBLAS); callers check that when they are built. Not collective.
void host_gemm(DType dt, bool adjoint, int64_t rows, int64_t cols, int64_t inner, const void *a, int64_t lda,
               const void *b, bool accumulate, void *c);

}  // namespace plm::ops
