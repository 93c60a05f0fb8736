// Linear operators. A local operator (dense matrix, diagonal, identity, zero, user callback)
// maps a local buffer to a local buffer; a distributed operator (block-diagonal, vertical and
// horizontal stacks) maps a DistributedArray on its domain layout to one on its range layout.
// Composites (adjoint, scale, sum, product) combine either kind. Operators are immutable and
// shared: a composite or stack keeps its parts alive. Scratch space is allocated when an
// operator is made, never per apply. Only the communication layer talks to MPI.
#pragma once

#include <memory>
#include <vector>

#include "array/distributed_array.hpp"

namespace plm::ops {

class Operator {
public:
    using Ptr = std::shared_ptr<const Operator>;
    virtual ~Operator() = default;
    Operator(const Operator &) = delete;
    Operator &operator=(const Operator &) = delete;

    DType dtype() const { return dtype_; }
    // Local: the matrix shape. Distributed: the global sizes of range and domain.
    int64_t rows() const { return rows_; }
    int64_t cols() const { return cols_; }
    bool is_local() const { return !domain_; }
    // A user callback inside: a local apply may fail after the arguments were checked, so a
    // distributed apply agrees on its outcome.
    virtual bool may_fail() const { return false; }

    // Local operators: out (rows) = A in (cols), or out (cols) = A^H in (rows). Host buffers of
    // dtype() that do not overlap. Not collective.
    virtual void local_apply(bool adjoint, const void *in, void *out) const;
    // Whether the operator computes on device arrays itself (dense blocks through cuBLAS, and
    // block-diagonals of those); the others get host twins of device arrays (HostStage).
    virtual bool on_device() const { return false; }
    // local_apply() on device buffers, ordered on e.stream; only where on_device().
    virtual void local_apply_device(const Exec &e, bool adjoint, const void *in, void *out) const;

    // Distributed operators: the layouts of x (domain) and of y = A x (range).
    const ArrayLayout::Ptr &domain() const { return domain_; }
    const ArrayLayout::Ptr &range() const { return range_; }
    const comm::Communicator &comm() const { return domain_->comm(); }
    // y = A x, or y = A^H x. The arrays' layouts and dtype must be checked by the caller
    // (check_parts). Collective: an error is thrown on every rank.
    virtual void apply(const DistributedArray &x, DistributedArray &y, bool adjoint) const;

    // Stacked operators map stacks (lists of arrays) to stacks: the parts of their domain and
    // range, one layout per member. A plain distributed operator has one part on each side.
    using In = std::vector<const DistributedArray *>;
    using Out = std::vector<DistributedArray *>;
    bool stacked() const { return !dparts_.empty(); }
    std::vector<ArrayLayout::Ptr> domain_parts() const { return stacked() ? dparts_ : std::vector{domain_}; }
    std::vector<ArrayLayout::Ptr> range_parts() const { return stacked() ? rparts_ : std::vector{range_}; }
    // apply() on parts; the default (plain operators) takes one part on each side.
    virtual void apply_parts(const In &x, const Out &y, bool adjoint) const;
    // Throws SIZE_MISMATCH / DTYPE_MISMATCH unless every member of x is on the domain part
    // (range when adjoint) and of y on the range part (domain), with this operator's dtype,
    // and the member counts match. Distributed operators only. Not collective.
    void check_parts(const In &x, const Out &y, bool adjoint) const;


protected:
    Operator(DType dt, int64_t rows, int64_t cols) : dtype_(dt), rows_(rows), cols_(cols) {}
    Operator(DType dt, ArrayLayout::Ptr domain, ArrayLayout::Ptr range);

    DType dtype_;
    int64_t rows_, cols_;
    ArrayLayout::Ptr domain_, range_;  // null for local operators; a stacked one's first parts
    std::vector<ArrayLayout::Ptr> dparts_, rparts_;  // stacked operators only
};

// Operators and solvers compute on host memory; device arrays reach them through host twins.
// The constructor copies device inputs (and outputs, when read_outputs: a solver's x0) to
// host twins, in() and out() are what the operator or solver runs on, and finish() copies
// the outputs back to their device arrays. Host arrays pass through untouched. Allocates:
// callers construct it inside an agreement check. Not collective.
class HostStage {
public:
    HostStage() = default;
    // stage = false: every array passes through untouched (an operator that runs on device).
    HostStage(const Operator::In &x, const Operator::Out &y, bool read_outputs = false, bool stage = true);
    const Operator::In &in() const { return in_; }
    const Operator::Out &out() const { return out_; }
    void finish() const;

private:
    Operator::In in_;
    Operator::Out out_, device_out_;
    std::vector<DistributedArray::Ptr> twins_;
};

// Runs a local step of a distributed apply and makes its outcome collective when it may fail
// (a user callback inside, or device work: uploads and CUDA calls can fail on one rank).
void agree_on(const Operator &op, const comm::Communicator &c, const std::optional<Error> &local,
              bool device = false);

// Local building blocks. Not collective.
// a: rows x cols elements of dt, row-major unless col_major; copied unless wrap (then it must
// outlive the operator).
Operator::Ptr dense(DType dt, int64_t rows, int64_t cols, const void *a, bool col_major, bool wrap);
Operator::Ptr diagonal(DType dt, int64_t n, const void *d);  // copied
Operator::Ptr identity(DType dt, int64_t n);
Operator::Ptr zero(DType dt, int64_t rows, int64_t cols);
// fn(ctx, in, n_in, out, n_out, dtype, memory) returns 0 on success; destroy(ctx) runs when
// the operator goes.
using CallbackFn = int (*)(void *ctx, const void *in, int64_t n_in, void *out, int64_t n_out, plm_dtype_t dtype,
                           plm_memory_t memory);
Operator::Ptr callback(DType dt, int64_t rows, int64_t cols, CallbackFn matvec, CallbackFn rmatvec, void *ctx,
                       void (*destroy)(void *));

// The 1-D layout of distributed operators: per-rank sizes n (SCATTER) or one replicated
// length (BROADCAST, n[0]), with a mask (may be empty). Collective only for a new mask's group.
ArrayLayout::Ptr vector_layout(const CommPtr &c, const std::vector<int64_t> &n, plm_partition_t part,
                               std::vector<int> mask);

// Distributed operators, collective on c through ag (built on c). parts: this rank's local
// operators.
// BlockDiag: this rank's blocks on the diagonal; domain and range are 1-D SCATTER with this
// rank's column and row sums as local sizes, and the mask (may be empty) on both.
Operator::Ptr block_diag(comm::Agreement &ag, const CommPtr &c, std::vector<Operator::Ptr> parts,
                         std::vector<int> mask);
// VStack: every part has the same columns; domain 1-D BROADCAST of that length, range 1-D
// SCATTER with this rank's row sum. The adjoint sums over the ranks (one allreduce).
Operator::Ptr vstack(comm::Agreement &ag, const CommPtr &c, std::vector<Operator::Ptr> parts);
// HStack: every part has the same rows; domain 1-D SCATTER (column sums), range 1-D BROADCAST.
Operator::Ptr hstack(comm::Agreement &ag, const CommPtr &c, std::vector<Operator::Ptr> parts);

// The same local operator on every rank, applied to BROADCAST vectors (PyLops-MPI's
// MPILinearOperator / asmpilinearoperator): each rank computes the whole result. Collective.
Operator::Ptr broadcast(comm::Agreement &ag, const CommPtr &c, Operator::Ptr local);

// Stacked operators over distributed parts (PyLops-MPI's MPIStackedBlockDiag and
// MPIStackedVStack). Not collective. StackedBlockDiag maps member i through part i;
// StackedVStack maps one array (every part's domain) to a stack, its adjoint sums.
Operator::Ptr stacked_block_diag(std::vector<Operator::Ptr> parts);
Operator::Ptr stacked_vstack(std::vector<Operator::Ptr> parts);

// Composites: both local or both distributed. Not collective.
Operator::Ptr adjoint(Operator::Ptr a);
Operator::Ptr scaled(Operator::Ptr a, const Scalar &alpha);  // alpha of a's dtype
Operator::Ptr sum(Operator::Ptr a, Operator::Ptr b);         // a + b
Operator::Ptr product(Operator::Ptr a, Operator::Ptr b);     // a b: b first
Operator::Ptr transpose(Operator::Ptr a);                    // a^T = conj(a^H conj(.))
Operator::Ptr conjugate(Operator::Ptr a);                    // conj(a) = conj(a conj(.))
Operator::Ptr power(Operator::Ptr a, int p);                 // a^p, a square, p >= 0

// Stencil operators (ops/stencil.cpp) on an N-D model (dims, C order) split along axis 0 in
// whole rows: local_rows is this rank's, or -1 on every rank for the default split. Domain
// and range are that 1-D SCATTER layout. Raw caller values, checked into ag (built on c);
// collective. kind: a plm_deriv_kind_t value.
struct StencilModel {
    int dtype = PLM_FLOAT64;
    int ndim = 0;
    const int64_t *dims = nullptr;
    int64_t local_rows = -1;
};
Operator::Ptr first_derivative(comm::Agreement &ag, const CommPtr &c, const StencilModel &m, int axis, double sampling,
                               int kind, int order, bool edge);
Operator::Ptr second_derivative(comm::Agreement &ag, const CommPtr &c, const StencilModel &m, int axis,
                                double sampling, int kind, bool edge);
// sum_k weights[k] * second derivative along axes[k] (equal lengths, distinct axes).
Operator::Ptr laplacian(comm::Agreement &ag, const CommPtr &c, const StencilModel &m, const std::vector<int> &axes,
                        const std::vector<double> &weights, const std::vector<double> &sampling, int kind, bool edge);
// A stacked vstack of first derivatives along every axis; sampling empty (all 1) or one per axis.
Operator::Ptr gradient(comm::Agreement &ag, const CommPtr &c, const StencilModel &m, const std::vector<double> &sampling,
                       int kind, bool edge);
// Halo (ops/halo.cpp): dims split over a process grid (empty: all ranks on the last axis),
// halo widths as in plm_op_halo (1, ndim or 2 ndim values). Collective.
Operator::Ptr halo(comm::Agreement &ag, const CommPtr &c, int dtype, const std::vector<int64_t> &dims,
                   const std::vector<int> &grid, const std::vector<int64_t> &widths);

// MatrixMult (ops/matmul.cpp), Y = A X with A n x k, X k x m. kind: a plm_matmul_kind_t value.
// The blocks rank `rank` of nranks holds on a grid of grid_rows rows (0: the largest divisor
// of nranks not above its square root), each {row_begin, row_end, col_begin, col_end}, as
// documented at plm_matmul_blocks. Pure; INVALID_ARG for bad arguments.
struct MatmulBlocks {
    int grid_rows = 1, grid_cols = 1, row = 0, col = 0;
    int64_t a[4] = {}, x[4] = {}, y[4] = {};
};
MatmulBlocks matmul_blocks(int kind, int nranks, int rank, int grid_rows, int64_t n, int64_t k, int64_t m);
// a: this rank's block of A, row-major, copied (may be NULL when empty). Domain and range:
// 1-D SCATTER of the X and Y blocks (block kind: mask {grid column of each rank}). dtype: raw
// plm_dtype_t. Collective on c through ag (built on c).
Operator::Ptr matrix_mult(comm::Agreement &ag, const CommPtr &c, int kind, int grid_rows, int dtype, int64_t n,
                          int64_t k, int64_t m, const void *a);

}  // namespace plm::ops
