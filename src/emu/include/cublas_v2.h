/* The emulated device: the cuBLAS calls pylopsmpi makes, served by the host BLAS (CBLAS,
 * column-major) on the handle's stream, with cuBLAS's argument checks. */
#ifndef PLM_EMU_CUBLAS_V2_H
#define PLM_EMU_CUBLAS_V2_H

#include "cuda_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_NOT_INITIALIZED = 1,
    CUBLAS_STATUS_ALLOC_FAILED = 3,
    CUBLAS_STATUS_INVALID_VALUE = 7,
    CUBLAS_STATUS_ARCH_MISMATCH = 8,
    CUBLAS_STATUS_MAPPING_ERROR = 11,
    CUBLAS_STATUS_EXECUTION_FAILED = 13,
    CUBLAS_STATUS_INTERNAL_ERROR = 14,
    CUBLAS_STATUS_NOT_SUPPORTED = 15
} cublasStatus_t;

typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 } cublasOperation_t;

typedef struct cublasContext *cublasHandle_t;

cublasStatus_t cublasCreate(cublasHandle_t *handle);
cublasStatus_t cublasDestroy(cublasHandle_t handle);
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream);
const char *cublasGetStatusString(cublasStatus_t status);
const char *cublasGetStatusName(cublasStatus_t status);

cublasStatus_t cublasSgemv(cublasHandle_t h, cublasOperation_t trans, int m, int n, const float *alpha, const float *A,
                           int lda, const float *x, int incx, const float *beta, float *y, int incy);
cublasStatus_t cublasDgemv(cublasHandle_t h, cublasOperation_t trans, int m, int n, const double *alpha,
                           const double *A, int lda, const double *x, int incx, const double *beta, double *y, int incy);
cublasStatus_t cublasCgemv(cublasHandle_t h, cublasOperation_t trans, int m, int n, const cuComplex *alpha,
                           const cuComplex *A, int lda, const cuComplex *x, int incx, const cuComplex *beta,
                           cuComplex *y, int incy);
cublasStatus_t cublasZgemv(cublasHandle_t h, cublasOperation_t trans, int m, int n, const cuDoubleComplex *alpha,
                           const cuDoubleComplex *A, int lda, const cuDoubleComplex *x, int incx,
                           const cuDoubleComplex *beta, cuDoubleComplex *y, int incy);

cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const float *alpha, const float *A, int lda, const float *B, int ldb, const float *beta,
                           float *C, int ldc);
cublasStatus_t cublasDgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const double *alpha, const double *A, int lda, const double *B, int ldb,
                           const double *beta, double *C, int ldc);
cublasStatus_t cublasCgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const cuComplex *alpha, const cuComplex *A, int lda, const cuComplex *B, int ldb,
                           const cuComplex *beta, cuComplex *C, int ldc);
cublasStatus_t cublasZgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const cuDoubleComplex *alpha, const cuDoubleComplex *A, int lda, const cuDoubleComplex *B,
                           int ldb, const cuDoubleComplex *beta, cuDoubleComplex *C, int ldc);

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const float *alpha, const float *A, int lda, long long sa,
                                         const float *B, int ldb, long long sb, const float *beta, float *C, int ldc,
                                         long long sc, int batch);
cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const double *alpha, const double *A, int lda, long long sa,
                                         const double *B, int ldb, long long sb, const double *beta, double *C,
                                         int ldc, long long sc, int batch);
cublasStatus_t cublasCgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const cuComplex *alpha, const cuComplex *A, int lda, long long sa,
                                         const cuComplex *B, int ldb, long long sb, const cuComplex *beta,
                                         cuComplex *C, int ldc, long long sc, int batch);
cublasStatus_t cublasZgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const cuDoubleComplex *alpha, const cuDoubleComplex *A, int lda,
                                         long long sa, const cuDoubleComplex *B, int ldb, long long sb,
                                         const cuDoubleComplex *beta, cuDoubleComplex *C, int ldc, long long sc,
                                         int batch);

#ifdef __cplusplus
}
#endif

#endif
