// What Fredholm1 and MDC share (ops/signal/fredholm.cpp, mdc.cpp): the batched products of a
// kernel G split along its first axis (slices, or frequencies for MDC) over the ranks, on
// BROADCAST vectors, on host data (CBLAS, one gemm a slice) or device data (cuBLAS, one
// strided-batched gemm for all of this rank's slices).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "ops/operator.hpp"
#ifdef PLM_HAVE_CUDA
#include "ops/device_blas.hpp"
#endif

namespace plm::ops {

// G (and G^H with save_gt) on one device, uploaded once per device.
struct DeviceKernel {
    Buffer g, gh;
};

// The part of an apply's Work the products need: on device data, G there and a cuBLAS handle
// (host data: nothing).
struct SlicesWork : Work {
    std::shared_ptr<const DeviceKernel> dev;
#ifdef PLM_HAVE_CUDA
    std::unique_ptr<BlasHandle> blas;
#endif
};

// This rank's slices of G and the gather plan. Vectors are (total slices, rows, nz) in C order:
// the domain side has ny rows per slice, the range side nx.
class Slices {
public:
    Slices() = default;
    // g: nsl slices of nx x ny elements of dt (host, C order), copied, each element times
    // `scale` and conjugated when conj (MDC's prescaling and conj); save_gt keeps G^H too.
    // Allocates; not collective. Throws INVALID_ARG (sizes, g_bytes), NOT_SUPPORTED (past int).
    Slices(DType dt, int64_t nsl, int64_t nx, int64_t ny, int64_t nz, const void *g, int64_t g_bytes, bool save_gt,
           double scale = 1.0, bool conj = false);

    // Every rank's slice count (counts[r], from the constructor's agreement): fixes this rank's
    // (rank's) first slice and the gather counts. Allocates; throws INVALID_ARG past 64 bits.
    void plan(const std::vector<int64_t> &counts, int rank);
    int64_t total() const { return total_; }
    int64_t local() const { return nsl_; }

    // Fills w for applies on data of e's space: for device data, G on e.device (uploaded by
    // the first call for that device, kept) and a cuBLAS handle. Allocates (make_work).
    void prepare(const Exec &e, SlicesWork &w) const;
    // Elements one gather receives at most (the staging the device backends need).
    int64_t gathered() const { return total_ * std::max(nx_, ny_) * nz_; }

    // The products of this rank's slices: out's rows of these slices (out whole (total, nx, nz),
    // or (total, ny, nz) for the adjoint) = G in (G^H in); in: the whole vector on the other
    // side. Host or device buffers (e's space, w from prepare). Not collective; allocates nothing.
    void multiply(const Exec &e, bool adjoint, const void *in, void *out, const SlicesWork &w) const;
    // Then the allgatherv of every rank's slices of out, in place. Collective on c.
    void gather(const comm::Communicator &c, const Exec &e, bool adjoint, void *out) const;

private:
    DType dt_ = DType::f64;
    int64_t nsl_ = 0, nx_ = 0, ny_ = 0, nz_ = 0, first_ = 0, total_ = 0;
    Buffer g_, gh_;  // (nsl, nx, ny) and, with save_gt, (nsl, ny, nx)
    std::vector<int64_t> counts_[2], displs_[2];  // allgatherv of the forward [0] / adjoint [1] result
    struct ByDevice {
        std::mutex lock;
        std::map<int, std::shared_ptr<const DeviceKernel>> kernels;
    };
    std::shared_ptr<ByDevice> dev_;  // made by the constructor (a default Slices allocates nothing)
};

}  // namespace plm::ops
