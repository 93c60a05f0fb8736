// The emulated cuBLAS: gemv, gemm and strided-batched gemm through the host CBLAS, column-major
// as cuBLAS is, queued on the handle's stream. Arguments are checked as cuBLAS checks them
// (CUBLAS_STATUS_INVALID_VALUE), and the extent each matrix and vector spans must lie in one
// device allocation: a layout or leading-dimension mistake that would read or write past a
// buffer on a GPU is a device fault here (sticky cudaErrorIllegalAddress), not a quiet result.
// Scalars follow CUBLAS_POINTER_MODE_HOST: read when the call is made.
#include <cblas.h>
#include <cublas_v2.h>

#include <algorithm>
#include <complex>

#include "emu.hpp"

using namespace plm_emu;

struct cublasContext {
    cudaStream_t stream = nullptr;
};

namespace {

CBLAS_TRANSPOSE cb(cublasOperation_t t)
{
    return t == CUBLAS_OP_N ? CblasNoTrans : t == CUBLAS_OP_T ? CblasTrans : CblasConjTrans;
}

bool valid_op(cublasOperation_t t) { return t == CUBLAS_OP_N || t == CUBLAS_OP_T || t == CUBLAS_OP_C; }

// Elements a rows x cols column-major matrix with leading dimension ld spans.
long long span(long long rows, long long cols, long long ld) { return rows <= 0 || cols <= 0 ? 0 : ld * (cols - 1) + rows; }
long long vspan(long long n, int inc) { return n <= 0 ? 0 : (n - 1) * std::abs(inc) + 1; }

template <typename T> bool inside(const T *p, long long elems)
{
    return elems == 0 || device_range(p, static_cast<size_t>(elems) * sizeof(T));
}

// Device work of a cuBLAS call: the range checks run with it (a fault there is a device fault).
template <typename F> cublasStatus_t queue(cublasHandle_t h, const char *what, bool in_bounds, F &&f)
{
    if (!in_bounds) {
        const char *name = what;
        const cudaError_t e = enqueue(h->stream, fn_op([name] {
            fault(cudaErrorIllegalAddress, "%s reads or writes past a device allocation (check its dimensions, "
                                           "leading dimensions and strides)",
                  name);
        }));
        return e == cudaSuccess ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
    }
    return enqueue(h->stream, fn_op(std::forward<F>(f))) == cudaSuccess ? CUBLAS_STATUS_SUCCESS
                                                                         : CUBLAS_STATUS_EXECUTION_FAILED;
}

template <typename T> struct Blas;
template <> struct Blas<float> {
    static void gemv(CBLAS_TRANSPOSE t, int m, int n, float a, const float *A, int lda, const float *x, int ix, float b,
                     float *y, int iy)
    {
        cblas_sgemv(CblasColMajor, t, m, n, a, A, lda, x, ix, b, y, iy);
    }
    static void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, float a, const float *A, int lda,
                     const float *B, int ldb, float b, float *C, int ldc)
    {
        cblas_sgemm(CblasColMajor, ta, tb, m, n, k, a, A, lda, B, ldb, b, C, ldc);
    }
};
template <> struct Blas<double> {
    static void gemv(CBLAS_TRANSPOSE t, int m, int n, double a, const double *A, int lda, const double *x, int ix,
                     double b, double *y, int iy)
    {
        cblas_dgemv(CblasColMajor, t, m, n, a, A, lda, x, ix, b, y, iy);
    }
    static void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, double a, const double *A, int lda,
                     const double *B, int ldb, double b, double *C, int ldc)
    {
        cblas_dgemm(CblasColMajor, ta, tb, m, n, k, a, A, lda, B, ldb, b, C, ldc);
    }
};
template <> struct Blas<cuComplex> {
    static void gemv(CBLAS_TRANSPOSE t, int m, int n, cuComplex a, const cuComplex *A, int lda, const cuComplex *x,
                     int ix, cuComplex b, cuComplex *y, int iy)
    {
        cblas_cgemv(CblasColMajor, t, m, n, &a, A, lda, x, ix, &b, y, iy);
    }
    static void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, cuComplex a, const cuComplex *A,
                     int lda, const cuComplex *B, int ldb, cuComplex b, cuComplex *C, int ldc)
    {
        cblas_cgemm(CblasColMajor, ta, tb, m, n, k, &a, A, lda, B, ldb, &b, C, ldc);
    }
};
template <> struct Blas<cuDoubleComplex> {
    static void gemv(CBLAS_TRANSPOSE t, int m, int n, cuDoubleComplex a, const cuDoubleComplex *A, int lda,
                     const cuDoubleComplex *x, int ix, cuDoubleComplex b, cuDoubleComplex *y, int iy)
    {
        cblas_zgemv(CblasColMajor, t, m, n, &a, A, lda, x, ix, &b, y, iy);
    }
    static void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, cuDoubleComplex a,
                     const cuDoubleComplex *A, int lda, const cuDoubleComplex *B, int ldb, cuDoubleComplex b,
                     cuDoubleComplex *C, int ldc)
    {
        cblas_zgemm(CblasColMajor, ta, tb, m, n, k, &a, A, lda, B, ldb, &b, C, ldc);
    }
};

template <typename T>
cublasStatus_t gemv(cublasHandle_t h, cublasOperation_t trans, int m, int n, const T *alpha, const T *A, int lda,
                    const T *x, int incx, const T *beta, T *y, int incy, const char *what)
{
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!valid_op(trans) || m < 0 || n < 0 || lda < std::max(1, m) || incx == 0 || incy == 0 || !alpha || !beta)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
    const T a = *alpha, b = *beta;
    const long long nx = trans == CUBLAS_OP_N ? n : m, ny = trans == CUBLAS_OP_N ? m : n;
    const bool ok = inside(A, span(m, n, lda)) && inside(x, vspan(nx, incx)) && inside(y, vspan(ny, incy));
    const CBLAS_TRANSPOSE t = cb(trans);
    return queue(h, what, ok, [=] { Blas<T>::gemv(t, m, n, a, A, lda, x, incx, b, y, incy); });
}

template <typename T>
cublasStatus_t gemm_batched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const T *alpha, const T *A, int lda, long long sa, const T *B, int ldb, long long sb,
                            const T *beta, T *C, int ldc, long long sc, int batch, const char *what)
{
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    const int rows_a = ta == CUBLAS_OP_N ? m : k, cols_a = ta == CUBLAS_OP_N ? k : m;
    const int rows_b = tb == CUBLAS_OP_N ? k : n, cols_b = tb == CUBLAS_OP_N ? n : k;
    if (!valid_op(ta) || !valid_op(tb) || m < 0 || n < 0 || k < 0 || batch < 0 || lda < std::max(1, rows_a) ||
        ldb < std::max(1, rows_b) || ldc < std::max(1, m) || !alpha || !beta)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
    const T a = *alpha, b = *beta;
    bool ok = true;
    for (int i = 0; i < batch && ok; ++i)
        ok = inside(A + i * sa, span(rows_a, cols_a, lda)) && inside(B + i * sb, span(rows_b, cols_b, ldb)) &&
             inside(C + i * sc, span(m, n, ldc));
    const CBLAS_TRANSPOSE cta = cb(ta), ctb = cb(tb);
    return queue(h, what, ok, [=] {
        for (int i = 0; i < batch; ++i)
            Blas<T>::gemm(cta, ctb, m, n, k, a, A + i * sa, lda, B + i * sb, ldb, b, C + i * sc, ldc);
    });
}

}  // namespace

extern "C" {

cublasStatus_t cublasCreate(cublasHandle_t *handle)
{
    if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
    if (sticky_error() != cudaSuccess || device_count() == 0) return CUBLAS_STATUS_NOT_INITIALIZED;
    *handle = new cublasContext();
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle)
{
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    delete handle;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream)
{
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (check_stream(stream) != cudaSuccess) return CUBLAS_STATUS_INVALID_VALUE;
    handle->stream = stream;
    return CUBLAS_STATUS_SUCCESS;
}

const char *cublasGetStatusName(cublasStatus_t s)
{
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    }
    return "CUBLAS_STATUS_UNKNOWN";
}

const char *cublasGetStatusString(cublasStatus_t s)
{
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    default: return "an internal operation failed";
    }
}

cublasStatus_t cublasSgemv(cublasHandle_t h, cublasOperation_t t, int m, int n, const float *alpha, const float *A,
                           int lda, const float *x, int incx, const float *beta, float *y, int incy)
{
    return gemv(h, t, m, n, alpha, A, lda, x, incx, beta, y, incy, "cublasSgemv");
}
cublasStatus_t cublasDgemv(cublasHandle_t h, cublasOperation_t t, int m, int n, const double *alpha, const double *A,
                           int lda, const double *x, int incx, const double *beta, double *y, int incy)
{
    return gemv(h, t, m, n, alpha, A, lda, x, incx, beta, y, incy, "cublasDgemv");
}
cublasStatus_t cublasCgemv(cublasHandle_t h, cublasOperation_t t, int m, int n, const cuComplex *alpha,
                           const cuComplex *A, int lda, const cuComplex *x, int incx, const cuComplex *beta,
                           cuComplex *y, int incy)
{
    return gemv(h, t, m, n, alpha, A, lda, x, incx, beta, y, incy, "cublasCgemv");
}
cublasStatus_t cublasZgemv(cublasHandle_t h, cublasOperation_t t, int m, int n, const cuDoubleComplex *alpha,
                           const cuDoubleComplex *A, int lda, const cuDoubleComplex *x, int incx,
                           const cuDoubleComplex *beta, cuDoubleComplex *y, int incy)
{
    return gemv(h, t, m, n, alpha, A, lda, x, incx, beta, y, incy, "cublasZgemv");
}

cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const float *alpha, const float *A, int lda, const float *B, int ldb, const float *beta,
                           float *C, int ldc)
{
    return gemm_batched(h, ta, tb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1, "cublasSgemm");
}
cublasStatus_t cublasDgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const double *alpha, const double *A, int lda, const double *B, int ldb,
                           const double *beta, double *C, int ldc)
{
    return gemm_batched(h, ta, tb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1, "cublasDgemm");
}
cublasStatus_t cublasCgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const cuComplex *alpha, const cuComplex *A, int lda, const cuComplex *B, int ldb,
                           const cuComplex *beta, cuComplex *C, int ldc)
{
    return gemm_batched(h, ta, tb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1, "cublasCgemm");
}
cublasStatus_t cublasZgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const cuDoubleComplex *alpha, const cuDoubleComplex *A, int lda, const cuDoubleComplex *B,
                           int ldb, const cuDoubleComplex *beta, cuDoubleComplex *C, int ldc)
{
    return gemm_batched(h, ta, tb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1, "cublasZgemm");
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const float *alpha, const float *A, int lda, long long sa,
                                         const float *B, int ldb, long long sb, const float *beta, float *C, int ldc,
                                         long long sc, int batch)
{
    return gemm_batched(h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch,
                        "cublasSgemmStridedBatched");
}
cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const double *alpha, const double *A, int lda, long long sa,
                                         const double *B, int ldb, long long sb, const double *beta, double *C,
                                         int ldc, long long sc, int batch)
{
    return gemm_batched(h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch,
                        "cublasDgemmStridedBatched");
}
cublasStatus_t cublasCgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const cuComplex *alpha, const cuComplex *A, int lda, long long sa,
                                         const cuComplex *B, int ldb, long long sb, const cuComplex *beta,
                                         cuComplex *C, int ldc, long long sc, int batch)
{
    return gemm_batched(h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch,
                        "cublasCgemmStridedBatched");
}
cublasStatus_t cublasZgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const cuDoubleComplex *alpha, const cuDoubleComplex *A, int lda,
                                         long long sa, const cuDoubleComplex *B, int ldb, long long sb,
                                         const cuDoubleComplex *beta, cuDoubleComplex *C, int ldc, long long sc,
                                         int batch)
{
    return gemm_batched(h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch,
                        "cublasZgemmStridedBatched");
}

}  // extern "C"
