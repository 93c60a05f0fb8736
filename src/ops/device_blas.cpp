#include "ops/device_blas.hpp"

#include <cublas_v2.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <vector>

#include "core/device_fault.hpp"

#include "kernels/kernels.hpp"
#include "memory/cuda.hpp"

namespace plm::ops {

namespace {

// A failed cuBLAS call: thrown before the agreement of the thread's call, recorded after it
// (core/device_fault.hpp).
void blas_check(cublasStatus_t rc, const char *what)
{
    if (rc == CUBLAS_STATUS_SUCCESS) return;
    char text[512];
    std::snprintf(text, sizeof text, "%s: %s (%s)", what, cublasGetStatusString(rc), cublasGetStatusName(rc));
    device_fault(PLM_ERR_CUDA, text);
}

// Row-major a as column-major (its transpose's layout), on the host.
std::vector<unsigned char> column_major(DType dt, int rows, int cols, const void *a)
{
    const size_t es = dtype_size(dt);
    std::vector<unsigned char> t(static_cast<size_t>(rows) * cols * es);
    const auto *src = static_cast<const unsigned char *>(a);
    for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j)
            std::copy_n(src + (static_cast<size_t>(i) * cols + j) * es, es,
                        t.data() + (static_cast<size_t>(j) * rows + i) * es);
    return t;
}

}  // namespace

DeviceDense::DeviceDense(DType dt, int64_t rows, int64_t cols, const void *a, bool col_major, int device)
    : dt_(dt), rows_(static_cast<int>(rows)), cols_(static_cast<int>(cols)), device_(device)
{
    const Exec e{Space::device, device, {}};
    cuda::activate(e);
    const size_t bytes = static_cast<size_t>(rows) * static_cast<size_t>(cols) * dtype_size(dt);
    a_ = Buffer::allocate(Space::device, bytes);
    if (bytes) {
        const std::vector<unsigned char> t = col_major ? std::vector<unsigned char>() : column_major(dt, rows_, cols_, a);
        copy_bytes(Space::device, a_.data(), Space::host, col_major ? a : t.data(), bytes);
    }
    cublasHandle_t h = nullptr;
    blas_check(cublasCreate(&h), "cublasCreate");
    handle_ = h;
}

DeviceDense::~DeviceDense()
{
    if (!handle_) return;
    try {
        cuda::activate(Exec{Space::device, device_, {}});  // the handle belongs to device_
    } catch (...) {
    }
    (void)cublasDestroy(static_cast<cublasHandle_t>(handle_));
}

void DeviceDense::apply(const Exec &e, bool adjoint, const void *in, void *out) const
{
    cuda::activate(e);
    const int n_out = adjoint ? cols_ : rows_;
    if (rows_ == 0 || cols_ == 0) {  // gemv leaves y alone when there is nothing to sum
        const unsigned char zero[16] = {};
        kernels::fill(e, dt_, n_out, zero, out);
        return;
    }
    std::lock_guard<std::mutex> g(lock_);
    auto h = static_cast<cublasHandle_t>(handle_);
    blas_check(cublasSetStream(h, cuda::stream_of(e)), "cublasSetStream");
    const int m = rows_, n = cols_, ld = rows_;
    switch (dt_) {
    case DType::f32: {
        const float one = 1, zero = 0;
        blas_check(cublasSgemv(h, adjoint ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, &one, static_cast<const float *>(a_.data()),
                               ld, static_cast<const float *>(in), 1, &zero, static_cast<float *>(out), 1),
                   "cublasSgemv");
        break;
    }
    case DType::f64: {
        const double one = 1, zero = 0;
        blas_check(cublasDgemv(h, adjoint ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, &one,
                               static_cast<const double *>(a_.data()), ld, static_cast<const double *>(in), 1, &zero,
                               static_cast<double *>(out), 1),
                   "cublasDgemv");
        break;
    }
    case DType::c64: {
        const cuComplex one{1, 0}, zero{0, 0};
        blas_check(cublasCgemv(h, adjoint ? CUBLAS_OP_C : CUBLAS_OP_N, m, n, &one,
                               static_cast<const cuComplex *>(a_.data()), ld, static_cast<const cuComplex *>(in), 1,
                               &zero, static_cast<cuComplex *>(out), 1),
                   "cublasCgemv");
        break;
    }
    case DType::c128: {
        const cuDoubleComplex one{1, 0}, zero{0, 0};
        blas_check(cublasZgemv(h, adjoint ? CUBLAS_OP_C : CUBLAS_OP_N, m, n, &one,
                               static_cast<const cuDoubleComplex *>(a_.data()), ld,
                               static_cast<const cuDoubleComplex *>(in), 1, &zero, static_cast<cuDoubleComplex *>(out),
                               1),
                   "cublasZgemv");
        break;
    }
    default: PLM_FAIL(PLM_ERR_INTERNAL, "dense operator of %s", dtype_name(dt_));
    }
}

BlasHandle::BlasHandle(int device) : device_(device)
{
    cuda::activate(Exec{Space::device, device, {}});
    cublasHandle_t h = nullptr;
    blas_check(cublasCreate(&h), "cublasCreate");
    handle_ = h;
}

BlasHandle::~BlasHandle()
{
    try {
        cuda::activate(Exec{Space::device, device_, {}});  // the handle belongs to device_
    } catch (...) {
    }
    (void)cublasDestroy(static_cast<cublasHandle_t>(handle_));
}

void device_gemm(const BlasHandle &bh, const Exec &e, DType dt, bool adjoint, int64_t rows, int64_t cols,
                 int64_t inner, const void *a, int64_t lda, const void *b, bool accumulate, void *c)
{
    if (rows == 0 || cols == 0) return;
    cuda::activate(e);
    if (inner == 0) {  // nothing to sum: cuBLAS need not touch C
        if (!accumulate) {
            const unsigned char zero[16] = {};
            kernels::fill(e, dt, rows * cols, zero, c);
        }
        return;
    }
    auto h = static_cast<cublasHandle_t>(bh.get());
    blas_check(cublasSetStream(h, cuda::stream_of(e)), "cublasSetStream");
    // Row-major C = op(A) B is column-major C^T = B^T op(A)^T: B^T is B's bytes (N x K), and
    // op(A)^T is A's bytes as they are (forward) or conjugate-transposed (adjoint).
    const int M = static_cast<int>(cols), N = static_cast<int>(rows), K = static_cast<int>(inner);
    const int la = static_cast<int>(std::max<int64_t>(lda, 1)), lb = M, lc = M;
    const bool cx = dt == DType::c64 || dt == DType::c128;
    const cublasOperation_t ta = !adjoint ? CUBLAS_OP_N : cx ? CUBLAS_OP_C : CUBLAS_OP_T;
    switch (dt) {
    case DType::f32: {
        const float one = 1, beta = accumulate ? 1.0f : 0.0f;
        blas_check(cublasSgemm(h, CUBLAS_OP_N, ta, M, N, K, &one, static_cast<const float *>(b), lb,
                               static_cast<const float *>(a), la, &beta, static_cast<float *>(c), lc),
                   "cublasSgemm");
        break;
    }
    case DType::f64: {
        const double one = 1, beta = accumulate ? 1.0 : 0.0;
        blas_check(cublasDgemm(h, CUBLAS_OP_N, ta, M, N, K, &one, static_cast<const double *>(b), lb,
                               static_cast<const double *>(a), la, &beta, static_cast<double *>(c), lc),
                   "cublasDgemm");
        break;
    }
    case DType::c64: {
        const cuComplex one{1, 0}, beta{accumulate ? 1.0f : 0.0f, 0};
        blas_check(cublasCgemm(h, CUBLAS_OP_N, ta, M, N, K, &one, static_cast<const cuComplex *>(b), lb,
                               static_cast<const cuComplex *>(a), la, &beta, static_cast<cuComplex *>(c), lc),
                   "cublasCgemm");
        break;
    }
    case DType::c128: {
        const cuDoubleComplex one{1, 0}, beta{accumulate ? 1.0 : 0.0, 0};
        blas_check(cublasZgemm(h, CUBLAS_OP_N, ta, M, N, K, &one, static_cast<const cuDoubleComplex *>(b), lb,
                               static_cast<const cuDoubleComplex *>(a), la, &beta, static_cast<cuDoubleComplex *>(c),
                               lc),
                   "cublasZgemm");
        break;
    }
    default: PLM_FAIL(PLM_ERR_INTERNAL, "matrix mult of %s", dtype_name(dt));
    }
}

void device_gemm_batched(const BlasHandle &bh, const Exec &e, DType dt, bool adjoint, int64_t rows, int64_t cols,
                         int64_t inner, const void *a, int64_t lda, int64_t stride_a, const void *b, int64_t stride_b,
                         void *c, int64_t stride_c, int64_t batch)
{
    if (rows == 0 || cols == 0 || batch <= 0) return;
    cuda::activate(e);
    const size_t es = dtype_size(dt);
    if (inner == 0) {  // nothing to sum: cuBLAS need not touch C
        const unsigned char zero[16] = {};
        for (int64_t i = 0; i < batch; ++i)
            kernels::fill(e, dt, rows * cols, zero, static_cast<char *>(c) + static_cast<size_t>(i * stride_c) * es);
        return;
    }
    auto h = static_cast<cublasHandle_t>(bh.get());
    blas_check(cublasSetStream(h, cuda::stream_of(e)), "cublasSetStream");
    // As device_gemm: row-major C = op(A) B is column-major C^T = B^T op(A)^T.
    const int M = static_cast<int>(cols), N = static_cast<int>(rows), K = static_cast<int>(inner);
    const int la = static_cast<int>(std::max<int64_t>(lda, 1)), lb = M, lc = M;
    const bool cx = dt == DType::c64 || dt == DType::c128;
    const cublasOperation_t ta = !adjoint ? CUBLAS_OP_N : cx ? CUBLAS_OP_C : CUBLAS_OP_T;
    const long long sa = stride_a, sb = stride_b, sc = stride_c;
    for (int64_t done = 0; done < batch;) {
        const int n = static_cast<int>(std::min<int64_t>(batch - done, INT_MAX));
        const char *pa = static_cast<const char *>(a) + static_cast<size_t>(done * stride_a) * es;
        const char *pb = static_cast<const char *>(b) + static_cast<size_t>(done * stride_b) * es;
        char *pc = static_cast<char *>(c) + static_cast<size_t>(done * stride_c) * es;
        switch (dt) {
        case DType::f32: {
            const float one = 1, zero = 0;
            blas_check(cublasSgemmStridedBatched(h, CUBLAS_OP_N, ta, M, N, K, &one, reinterpret_cast<const float *>(pb),
                                                 lb, sb, reinterpret_cast<const float *>(pa), la, sa, &zero,
                                                 reinterpret_cast<float *>(pc), lc, sc, n),
                       "cublasSgemmStridedBatched");
            break;
        }
        case DType::f64: {
            const double one = 1, zero = 0;
            blas_check(cublasDgemmStridedBatched(h, CUBLAS_OP_N, ta, M, N, K, &one, reinterpret_cast<const double *>(pb),
                                                 lb, sb, reinterpret_cast<const double *>(pa), la, sa, &zero,
                                                 reinterpret_cast<double *>(pc), lc, sc, n),
                       "cublasDgemmStridedBatched");
            break;
        }
        case DType::c64: {
            const cuComplex one{1, 0}, zero{0, 0};
            blas_check(cublasCgemmStridedBatched(h, CUBLAS_OP_N, ta, M, N, K, &one,
                                                 reinterpret_cast<const cuComplex *>(pb), lb, sb,
                                                 reinterpret_cast<const cuComplex *>(pa), la, sa, &zero,
                                                 reinterpret_cast<cuComplex *>(pc), lc, sc, n),
                       "cublasCgemmStridedBatched");
            break;
        }
        case DType::c128: {
            const cuDoubleComplex one{1, 0}, zero{0, 0};
            blas_check(cublasZgemmStridedBatched(h, CUBLAS_OP_N, ta, M, N, K, &one,
                                                 reinterpret_cast<const cuDoubleComplex *>(pb), lb, sb,
                                                 reinterpret_cast<const cuDoubleComplex *>(pa), la, sa, &zero,
                                                 reinterpret_cast<cuDoubleComplex *>(pc), lc, sc, n),
                       "cublasZgemmStridedBatched");
            break;
        }
        default: PLM_FAIL(PLM_ERR_INTERNAL, "batched matrix mult of %s", dtype_name(dt));
        }
        done += n;
    }
}

}  // namespace plm::ops
