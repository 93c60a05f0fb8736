// Local (single-rank) FFTs on C-order host buffers, the building block of the distributed FFT
// operators (src/ops/signal/). One plan per operator, made once at construction and executed on
// any buffers of the planned shape (FFTW's new-array execute), never re-planned per apply.
//
// A plan transforms `axes` of an array of `shape`; every other axis is a batch (FFTW's guru
// interface: the transform dims and the batch dims both carry strides, so no axis has to be
// moved to the end first). Kinds:
//   c2c: complex -> complex, forward (sign -1) or backward (sign +1), in place allowed;
//   r2c: real -> complex along the LAST of `axes` (n -> n/2+1), c2c along the others;
//   c2r: the inverse of r2c (the input is overwritten, as FFTW's c2r does).
// No scaling: callers apply the norm. Precision from the dtype: c64/f32 use fftw3f, c128/f64
// fftw3.
//
// Built with PLM_WITH_FFTW (CMake finds fftw3 and fftw3f through pkg-config). Without it, and for
// device buffers (cuFFT not wired yet), making a plan fails with PLM_ERR_NOT_SUPPORTED: the
// operators' entry points exist in every build and refuse at construction.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/dtype.hpp"
#include "memory/space.hpp"

namespace plm::kernels {

enum class FftKind { c2c_forward, c2c_backward, r2c, c2r };

class FftPlan {
public:
    // shape: the COMPLEX-side shape for c2c; for r2c/c2r the REAL-side shape (the complex side
    // has shape[axes.back()] / 2 + 1 there). dt: the real or complex dtype of the given
    // precision (f32/c64 or f64/c128). Throws Error (NOT_SUPPORTED, INVALID_ARG, ALLOC).
    FftPlan(Space space, DType dt, FftKind kind, const std::vector<int64_t> &shape, const std::vector<int> &axes);
    ~FftPlan();
    FftPlan(const FftPlan &) = delete;
    FftPlan &operator=(const FftPlan &) = delete;

    // out = transform(in); in and out hold the planned shapes (out may equal in for c2c).
    // Buffers FFTW sees as SIMD-aligned (the library's allocator gives 64 bytes) run FFTW's
    // SIMD codelets; any other buffer (aligned for the real type) runs an unaligned plan.
    void execute(const void *in, void *out) const;

    FftKind kind() const { return kind_; }

    struct Impl;

private:
    FftKind kind_;
    std::unique_ptr<Impl> impl_;
};

// Whether this build can make host FFT plans (PLM_WITH_FFTW).
bool fft_available();

}  // namespace plm::kernels
