// What a plan of kernels/fft.hpp holds, shared by the FFTW (fft.cpp) and cuFFT (fft_cuda.cpp)
// implementations.
#pragma once

#include <memory>
#include <vector>

#include "kernels/fft.hpp"

namespace plm::kernels {

struct FftPlan::Impl {
    virtual ~Impl() = default;
    virtual void execute(const Exec &e, const void *in, void *out, void *work) const = 0;
    virtual size_t work_bytes() const { return 0; }
};

// CUDA builds (fft_cuda.cpp): a cuFFT plan on `device` (-1: the current one). The arguments
// are checked by FftPlan.
std::unique_ptr<FftPlan::Impl> make_device_fft(DType dt, FftKind kind, const std::vector<int64_t> &shape,
                                               const std::vector<int> &axes, int device, const FftOptions &options);

}  // namespace plm::kernels
