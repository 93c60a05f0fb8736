// The distributed FFT operator (PyLops-MPI's MPIFFTND / MPIFFT2D, PyLops' FFT with nffts):
// slab decomposition, and a six-step 1-D FFT; see ops/signal/fft.cpp and docs/architecture.md.
#pragma once

#include <string>
#include <vector>

#include "ops/operator.hpp"

namespace plm::ops {

// Planning efforts (the values of the C API's plm_fft_planning_t): the default is measure.
enum : int {
    kPlanningDefault = 0,
    kPlanningEstimate = 1,
    kPlanningMeasure = 2,
    kPlanningPatient = 3,
    kPlanningExhaustive = 4,
};

// The caller's arguments, raw (checked into the agreement by fftnd).
struct FftSpec {
    int dtype = PLM_COMPLEX128;
    std::vector<int64_t> dims;
    std::vector<int> axes;
    std::vector<int64_t> nffts;  // one per axis, or empty (each axis' length)
    std::vector<double> sampling;  // one per axis
    int norm = PLM_FFT_NORM_NONE;
    int real = 0;
    std::vector<int> ifftshift_before, fftshift_after;  // one flag per axis
    int output = PLM_FFT_OUTPUT_FEWEST_EXCHANGES;
    int planning = kPlanningDefault;
};

// Collective on c through ag (built on c).
Operator::Ptr fftnd(comm::Agreement &ag, const CommPtr &c, const FftSpec &s);

// The output's global shape and distributed axis of an FFT operator (INVALID_ARG for
// another operator). Not collective.
void fft_range(const Operator &op, Shape *dimsd, int *axis);
// The frequencies of FFT axis i (i indexes the operator's axes). Not collective.
std::vector<double> fft_frequencies(const Operator &op, int i);

// FFTW's wisdom: every rank's merged, the same string on every rank (export); rank 0's
// string imported on every rank (import; wisdom may be NULL elsewhere). Collective on c
// through ag (built on c, arguments checked into it by the caller).
void fft_wisdom_export(comm::Agreement &ag, const CommPtr &c, std::string *out);
void fft_wisdom_import(comm::Agreement &ag, const CommPtr &c, const char *wisdom);

}  // namespace plm::ops
