// cuBLAS for local dense blocks on device memory (CUDA builds: ops/device_blas.cpp).
#pragma once

#include <cstdint>
#include <mutex>

#include "core/dtype.hpp"
#include "memory/space.hpp"

namespace plm::ops {

// A rows x cols dense matrix copied to a CUDA device (column-major there), applied with
// cuBLAS gemv on the caller's stream. rows and cols fit an int (CBLAS and cuBLAS sizes).
class DeviceDense {
public:
    // a: host memory, row-major unless col_major. Uploads to `device`.
    DeviceDense(DType dt, int64_t rows, int64_t cols, const void *a, bool col_major, int device);
    ~DeviceDense();
    DeviceDense(const DeviceDense &) = delete;
    DeviceDense &operator=(const DeviceDense &) = delete;

    int device() const { return device_; }
    // out (rows) = A in (cols), or out (cols) = A^H in (rows): device buffers, on e.stream.
    void apply(const Exec &e, bool adjoint, const void *in, void *out) const;

private:
    DType dt_;
    int rows_, cols_, device_;
    Buffer a_;                     // column-major, rows x cols, on device_
    void *handle_ = nullptr;       // cublasHandle_t
    mutable std::mutex lock_;      // the handle's stream is set per call
};

// A cuBLAS handle on one device, owned (by the Work of an operator that runs gemm there).
class BlasHandle {
public:
    explicit BlasHandle(int device);
    ~BlasHandle();
    BlasHandle(const BlasHandle &) = delete;
    BlasHandle &operator=(const BlasHandle &) = delete;
    void *get() const { return handle_; }

private:
    int device_;
    void *handle_ = nullptr;  // cublasHandle_t
};

// C (rows x cols) = op(A) B, or += when accumulate, all row-major device buffers on e.stream:
// op(A) is A (rows x inner, row stride lda) or, with adjoint, A^H of an (inner x rows) A. B
// and C are contiguous. The same contract as host_gemm (ops/host_blas.hpp).
void device_gemm(const BlasHandle &h, const Exec &e, DType dt, bool adjoint, int64_t rows, int64_t cols,
                 int64_t inner, const void *a, int64_t lda, const void *b, bool accumulate, void *c);

// batch products of device_gemm's kind in one strided-batched cuBLAS call (several past
// INT_MAX batches): product i reads A + i stride_a, B + i stride_b and writes C + i stride_c
// (strides in elements). C = op(A) B, no accumulation.
void device_gemm_batched(const BlasHandle &h, const Exec &e, DType dt, bool adjoint, int64_t rows, int64_t cols,
                         int64_t inner, const void *a, int64_t lda, int64_t stride_a, const void *b, int64_t stride_b,
                         void *c, int64_t stride_c, int64_t batch);

}  // namespace plm::ops
