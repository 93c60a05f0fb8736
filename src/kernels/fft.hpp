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
// Host plans need PLM_WITH_FFTW (CMake finds fftw3 and fftw3f through pkg-config); without it
// making one fails with PLM_ERR_NOT_SUPPORTED: the operators' entry points exist in every build
// and refuse at construction.
//
// Device plans (Space::device, CUDA builds: kernels/fft_cuda.cpp) run cuFFT on one device: the
// same transforms as one 1-D cuFFT pass per axis (batched over the other axes; r2c / c2r along
// the last of `axes`, the c2c passes of the others on the complex side), unnormalised as
// FFTW's. A device plan is made once and shared: it holds no work area of its own (cuFFT's
// auto-allocation is off), each execute() gets one from its caller (work_bytes(), from the
// caller's Work, so concurrent applies never share scratch) and runs on the caller's stream.
// Host-only builds: PLM_ERR_BACKEND_UNAVAILABLE.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "memory/space.hpp"

namespace plm::kernels {

enum class FftKind { c2c_forward, c2c_backward, r2c, c2r };

// How hard FFTW plans (its planner flags ESTIMATE, MEASURE, PATIENT, EXHAUSTIVE). Measuring
// times candidate algorithms on scratch arrays the plan allocates for that (never the
// caller's), so it costs time at construction only; what it learns stays in FFTW's wisdom
// (fft_wisdom_export()), and a later plan of the same problem reuses it at once. Device
// plans ignore it (cuFFT has no planner effort).
enum class FftEffort { estimate, measure, patient, exhaustive };

struct FftOptions {
    FftEffort effort = FftEffort::estimate;
    // c2c: planned for in == out (an in-place execute); otherwise in != out. r2c / c2r plans
    // are out of place.
    bool in_place = false;
    // r2c / c2r: the real side is the real parts of a complex array of the real-side shape
    // (every other real of the buffer: element stride 2), as the operators' complex arrays hold
    // real data; r2c reads them, c2r writes them and leaves the imaginary parts alone.
    bool interleaved_real = false;
    // c2c of a 2-D shape [a][b] along axis 1 whose spectrum side is stored transposed, [b][a]:
    // forward reads [a][b] and writes [b][a], backward reads [b][a] and writes [a][b] (the
    // local transpose of the distributed 1-D FFT, fused into the transform).
    bool transposed = false;
};

class FftPlan {
public:
    // shape: the COMPLEX-side shape for c2c; for r2c/c2r the REAL-side shape (the complex side
    // has shape[axes.back()] / 2 + 1 there). dt: the real or complex dtype of the given
    // precision (f32/c64 or f64/c128). device: the CUDA device of a device plan (-1: the
    // current one). Throws Error (NOT_SUPPORTED, INVALID_ARG, OUT_OF_MEMORY, CUDA).
    FftPlan(Space space, DType dt, FftKind kind, const std::vector<int64_t> &shape, const std::vector<int> &axes,
            int device = -1, const FftOptions &options = {});
    ~FftPlan();
    FftPlan(const FftPlan &) = delete;
    FftPlan &operator=(const FftPlan &) = delete;

    // out = transform(in); in and out hold the planned shapes, in == out exactly when the plan
    // is in place. Buffers FFTW sees as SIMD-aligned (the library's allocator gives 64 bytes)
    // run the plan made with the options' effort; any other buffer (aligned for the real type)
    // runs a second plan made with FFTW_ESTIMATE | FFTW_UNALIGNED. Host plans only.
    void execute(const void *in, void *out) const;
    // Either space: host plans ignore e and work; device plans queue the passes on e's stream
    // (e.device the plan's device) with work (device memory of work_bytes(), may be null when
    // that is 0) as cuFFT's work area, and return without waiting. Device buffers must be
    // aligned for their element type (a complex element's full size; the real side of
    // r2c / c2r for two reals): see fft_aligned().
    void execute(const Exec &e, const void *in, void *out, void *work) const;
    // The device scratch one execute() needs (0 for host plans).
    size_t work_bytes() const;

    FftKind kind() const { return kind_; }
    const FftOptions &options() const { return options_; }
    Space space() const { return space_; }

    struct Impl;

private:
    FftKind kind_;
    Space space_;
    FftOptions options_;
    int64_t shape_key_ = 0;  // dtype, kind, shape and axes: the sampling key (core/sim.hpp)
    std::unique_ptr<Impl> impl_;
};

// Whether this build can make host FFT plans (PLM_WITH_FFTW).
bool fft_available();

// FFTW's accumulated wisdom (what measuring planners learnt) of both precisions as one
// string, and the import of such a string (merged into the wisdom this process has; throws
// INVALID_ARG when FFTW cannot read it). Empty / no-op in builds without FFTW. Thread-safe
// against planning (one lock).
std::string fft_wisdom_export();
void fft_wisdom_import(const std::string &wisdom);
// Whether this build can make device FFT plans (CUDA builds; a device is needed to make one).
bool device_fft_available();

// Whether a device plan of this kind can be made for shape / axes: a real pass along an axis
// with more than one batch both before and after it (outer > 1 and inner > 1) reads rows of
// n * inner reals, so n * inner must be even for every row to start aligned for cuFFT's real
// data. Pure; the same on every rank when the shape past axis 0 is.
bool device_fft_layout_ok(FftKind kind, const std::vector<int64_t> &shape, const std::vector<int> &axes);
// Whether p is aligned for cuFFT data of dt: twice the real size (a complex element; for real
// dtypes too, as cuFFT's real passes may read pairs).
bool fft_aligned(const void *p, DType dt);

}  // namespace plm::kernels
