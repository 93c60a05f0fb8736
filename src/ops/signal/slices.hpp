// What Fredholm1 and MDC share (ops/signal/fredholm.cpp, mdc.cpp): the batched products of a
// kernel G split along its first axis (slices, or frequencies for MDC) over the ranks, on
// BROADCAST vectors, and the host staging of device operands.
#pragma once

#include <vector>

#include "ops/operator.hpp"

namespace plm::ops {

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

    // out (whole (total, nx, nz), or (total, ny, nz) for the adjoint) = G in (G^H in) for this
    // rank's slices, one gemm each, then an allgatherv of the slices' results in place. in:
    // the whole vector on the other side. Host buffers; collective on c. Allocates nothing.
    void apply(const comm::Communicator &c, const Exec &e, bool adjoint, const void *in, void *out) const;

private:
    DType dt_ = DType::f64;
    int64_t nsl_ = 0, nx_ = 0, ny_ = 0, nz_ = 0, first_ = 0, total_ = 0;
    Buffer g_, gh_;  // (nsl, nx, ny) and, with save_gt, (nsl, ny, nx)
    std::vector<int64_t> counts_[2], displs_[2];  // allgatherv of the forward [0] / adjoint [1] result
};

// The Work of an operator that computes on host data: with device operands, host copies of
// the input and the output (PLM_ERR_* of the copies agreed).
struct HostCopies : Work {
    Buffer in, out;
};
// A Work W (a HostCopies) for e's space: no copies for host data; host buffers of in_bytes
// and out_bytes for device data (counted as host twins, see twins_made()).
template <typename W = HostCopies> std::unique_ptr<W> host_copies(const Exec &e, size_t in_bytes, size_t out_bytes)
{
    auto w = std::make_unique<W>();
    if (e.space == Space::host) return w;
    count_twin();
    w->in = Buffer::allocate(Space::host, in_bytes);
    w->out = Buffer::allocate(Space::host, out_bytes);
    return w;
}

// Runs body(host exec, in, out) on x's and y's data: directly on host data, on the Work's host
// copies for device data (x copied in first, the result copied to y after; each copy's outcome
// agreed, since a device copy can fail on one rank). Collective on op's communicator.
template <typename Body>
void on_host(const Operator &op, const DistributedArray &x, DistributedArray &y, Work *w, Body &&body)
{
    const Exec e = x.exec();
    if (e.space == Space::host) return body(e, x.data(), y.data());
    auto &h = *static_cast<HostCopies *>(w);
    const size_t in_bytes = static_cast<size_t>(x.local_size()) * dtype_size(x.dtype());
    const size_t out_bytes = static_cast<size_t>(y.local_size()) * dtype_size(y.dtype());
    agree_on(op, op.comm(), comm::capture([&] { copy_bytes(Space::host, h.in.data(), e.space, x.data(), in_bytes, e.stream); }),
             true);
    body(op.comm().exec(Space::host), h.in.data(), h.out.data());
    agree_on(op, op.comm(),
             comm::capture([&] { copy_bytes(e.space, y.data(), Space::host, h.out.data(), out_bytes, e.stream); }), true);
}

}  // namespace plm::ops
