// CBLAS gemm on host buffers (see host_blas.hpp).
#include "ops/host_blas.hpp"

#include <algorithm>
#include <cstring>

#include <cblas.h>

#include "core/sim.hpp"

namespace plm::ops {

namespace {
void gemm(DType dt, CBLAS_TRANSPOSE ta, int M, int N, int K, const void *a, int la, const void *b, int lb,
          bool accumulate, void *c, int lc)
{
    switch (dt) {
    case DType::f32:
        cblas_sgemm(CblasRowMajor, ta, CblasNoTrans, M, N, K, 1.0f, static_cast<const float *>(a), la,
                    static_cast<const float *>(b), lb, accumulate ? 1.0f : 0.0f, static_cast<float *>(c), lc);
        break;
    case DType::f64:
        cblas_dgemm(CblasRowMajor, ta, CblasNoTrans, M, N, K, 1.0, static_cast<const double *>(a), la,
                    static_cast<const double *>(b), lb, accumulate ? 1.0 : 0.0, static_cast<double *>(c), lc);
        break;
    case DType::c64: {
        const float one[2] = {1, 0}, beta[2] = {accumulate ? 1.0f : 0.0f, 0};
        cblas_cgemm(CblasRowMajor, ta, CblasNoTrans, M, N, K, one, a, la, b, lb, beta, c, lc);
        break;
    }
    case DType::c128: {
        const double one[2] = {1, 0}, beta[2] = {accumulate ? 1.0 : 0.0, 0};
        cblas_zgemm(CblasRowMajor, ta, CblasNoTrans, M, N, K, one, a, la, b, lb, beta, c, lc);
        break;
    }
    default: PLM_FAIL(PLM_ERR_INTERNAL, "matrix mult of %s", dtype_name(dt));
    }
}
}  // namespace

void host_gemm(DType dt, bool adjoint, int64_t rows, int64_t cols, int64_t inner, const void *a, int64_t lda,
               const void *b, bool accumulate, void *c)
{
    if (rows == 0 || cols == 0) return;
    if (inner == 0) {  // nothing to sum: BLAS need not touch C
        if (!accumulate) std::memset(c, 0, static_cast<size_t>(rows * cols) * dtype_size(dt));
        return;
    }
    const int M = static_cast<int>(rows), N = static_cast<int>(cols), K = static_cast<int>(inner);
    const int la = static_cast<int>(std::max<int64_t>(lda, 1)), lb = N, lc = N;
    const CBLAS_TRANSPOSE ta = !adjoint ? CblasNoTrans : is_complex(dt) ? CblasConjTrans : CblasTrans;
    sim::compute(PLM_SIM_SITE, {cols, inner, int64_t(dt), adjoint, accumulate}, rows,
                 [&] { gemm(dt, ta, M, N, K, a, la, b, lb, accumulate, c, lc); });
}

}  // namespace plm::ops
