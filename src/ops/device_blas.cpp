#include "ops/device_blas.hpp"

#include <cublas_v2.h>

#include <algorithm>
#include <vector>

#include "kernels/kernels.hpp"
#include "memory/cuda.hpp"

namespace plm::ops {

namespace {

void blas_check(cublasStatus_t rc, const char *what)
{
    if (rc != CUBLAS_STATUS_SUCCESS)
        PLM_FAIL(PLM_ERR_CUDA, "%s: %s (%s)", what, cublasGetStatusString(rc), cublasGetStatusName(rc));
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

}  // namespace plm::ops
