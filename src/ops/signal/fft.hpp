// The distributed N-D FFT operator (PyLops-MPI's MPIFFTND / MPIFFT2D), slab decomposition:
// see ops/signal/fft.cpp and docs/architecture.md.
#pragma once

#include <vector>

#include "ops/operator.hpp"

namespace plm::ops {

// The caller's arguments, raw (checked into the agreement by fftnd).
struct FftSpec {
    int dtype = PLM_COMPLEX128;
    std::vector<int64_t> dims;
    std::vector<int> axes;
    std::vector<double> sampling;  // one per axis
    int norm = PLM_FFT_NORM_NONE;
    int real = 0;
    std::vector<int> ifftshift_before, fftshift_after;  // one flag per axis
    int output = PLM_FFT_OUTPUT_FEWEST_EXCHANGES;
};

// Collective on c through ag (built on c).
Operator::Ptr fftnd(comm::Agreement &ag, const CommPtr &c, const FftSpec &s);

// The output's global shape and distributed axis of an FFT operator (INVALID_ARG for
// another operator). Not collective.
void fft_range(const Operator &op, Shape *dimsd, int *axis);
// The frequencies of FFT axis i (i indexes the operator's axes). Not collective.
std::vector<double> fft_frequencies(const Operator &op, int i);

}  // namespace plm::ops
