// Linear operators. A local operator (dense matrix, diagonal, identity, zero, user callback)
// maps a local buffer to a local buffer; a distributed operator (block-diagonal, vertical and
// horizontal stacks) maps a DistributedArray on its domain layout to one on its range layout.
// Composites (adjoint, scale, sum, product) combine either kind. Operators are immutable and
// shared: a composite or stack keeps its parts alive. Applies run on host or device data alike
// (kernels dispatch on the memory space); their scratch is a Work made before the agreement of
// the call. Only the communication layer talks to MPI.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "array/distributed_array.hpp"

namespace plm::ops {

// Scratch of applies: made by Operator::make_work() before the agreement of the call that
// applies (so a failure to allocate is agreed), then used by one apply at a time. Operators
// keep no mutable state of their own: any number of threads may apply one operator at once,
// each with its own Work. A solve makes one and reuses it every iteration.
struct Work {
    virtual ~Work() = default;
};
using WorkPtr = std::unique_ptr<Work>;

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
    // Whether the operator is linear over the complex numbers (false: only over the reals, as
    // PyLops' clinear: an FFT of real input, which keeps the real part of its model). The dot
    // test compares real parts then.
    virtual bool clinear() const { return true; }
    // Whether applies on data in space s run there, with no host copy of the data (only user
    // callbacks declared for another memory space stage their data).
    virtual bool native(Space s) const;

    // The scratch an apply on data of the execution context e (its space and device) needs,
    // either direction; nullptr when none. Not collective; may allocate (call it inside an
    // agreement's check). For device data it also uploads what the operator keeps on the
    // device (dense matrices, diagonals), once per device.
    virtual WorkPtr make_work(const Exec &e) const;

    // Local operators: out (rows) = A in (cols), or out (cols) = A^H in (rows), buffers of
    // dtype() in e.space that do not overlap, work from make_work(e). Not collective.
    virtual void local_apply(const Exec &e, bool adjoint, const void *in, void *out, Work *w) const;

    // Distributed operators: the layouts of x (domain) and of y = A x (range).
    const ArrayLayout::Ptr &domain() const { return domain_; }
    const ArrayLayout::Ptr &range() const { return range_; }
    const comm::Communicator &comm() const { return domain_->comm(); }
    // y = A x, or y = A^H x, with work from make_work(x.exec()). The arrays' layouts, dtype and
    // space must be checked by the caller (check_parts). Collective: an error is thrown on every
    // rank.
    virtual void apply(const DistributedArray &x, DistributedArray &y, bool adjoint, Work *w) const;

    // Stacked operators map stacks (lists of arrays) to stacks: the parts of their domain and
    // range, one layout per member. A plain distributed operator has one part on each side.
    using In = std::vector<const DistributedArray *>;
    using Out = std::vector<DistributedArray *>;
    bool stacked() const { return !dparts_.empty(); }
    std::vector<ArrayLayout::Ptr> domain_parts() const { return stacked() ? dparts_ : std::vector{domain_}; }
    std::vector<ArrayLayout::Ptr> range_parts() const { return stacked() ? rparts_ : std::vector{range_}; }
    // The same without a copy (the apply path allocates nothing): the count and part i.
    size_t nparts(bool range) const { return stacked() ? (range ? rparts_ : dparts_).size() : 1; }
    const ArrayLayout::Ptr &part(bool range, size_t i) const
    {
        return stacked() ? (range ? rparts_ : dparts_)[i] : (range ? range_ : domain_);
    }
    // apply() on parts; the default (plain operators) takes one part on each side.
    virtual void apply_parts(const In &x, const Out &y, bool adjoint, Work *w) const;
    // Throws SIZE_MISMATCH / DTYPE_MISMATCH / INVALID_ARG unless every member of x is on the
    // domain part (range when adjoint) and of y on the range part (domain), with this
    // operator's dtype (not checked when !dtypes), all in one memory space, and the member
    // counts match. Distributed operators only. Not collective.
    void check_parts(const In &x, const Out &y, bool adjoint, bool dtypes = true) const;

protected:
    Operator(DType dt, int64_t rows, int64_t cols);
    Operator(DType dt, ArrayLayout::Ptr domain, ArrayLayout::Ptr range);

    // Sizes the communicator's staging memory for elems elements of the dtype staged at once
    // in e's space (host-staged device communication); from make_work, so before the
    // agreement.
    void reserve_staging(const Exec &e, int64_t elems) const;

    DType dtype_;
    int64_t rows_, cols_;
    ArrayLayout::Ptr domain_, range_;  // null for local operators; a stacked one's first parts
    std::vector<ArrayLayout::Ptr> dparts_, rparts_;  // stacked operators only

private:
    friend class WorkLease;
    // Works given back by leases, for the next apply (at most kCached, so giving one back
    // never allocates).
    static constexpr size_t kCached = 2;
    mutable std::mutex cache_lock_;
    mutable std::vector<std::pair<Exec, WorkPtr>> cached_;
};

// A Work made of the Works of several parts (stacks, block-diagonals, composites): part i's
// Work, or nullptr.
struct PartsWork : Work {
    std::vector<WorkPtr> parts;
};
WorkPtr parts_work(const std::vector<Operator::Ptr> &parts, const Exec &e);
Work *part_of(Work *w, size_t i);

// A Work taken for one call (an apply, or a whole solve): from a cache the operator keeps
// (so repeated applies of one operator allocate nothing), or made anew when the cached one is
// in use by another thread; given back when the lease ends. Take it inside the call's
// agreement check.
class WorkLease {
public:
    WorkLease() = default;
    WorkLease(const Operator &op, const Exec &e);
    ~WorkLease();
    WorkLease(WorkLease &&o) noexcept;
    WorkLease &operator=(WorkLease &&o) noexcept;
    Work *get() const { return work_.get(); }

private:
    void give_back() noexcept;
    const Operator *op_ = nullptr;
    Exec exec_{};
    WorkPtr work_;
};

// Arrays in the memory spaces an operator computes in: operands in one space run there;
// a mix of host and device operands runs on host twins of the device ones (made here, counted
// by twins_made()), copied back by finish(). Allocates: construct it inside an agreement check.
class HostStage {
public:
    HostStage() = default;
    // x and y must outlive the stage (operands in one space are used as they are: no copy).
    HostStage(const Operator::In &x, const Operator::Out &y, bool read_outputs = false);
    const Operator::In &in() const { return staged_ ? in_ : *x_; }
    const Operator::Out &out() const { return staged_ ? out_ : *y_; }
    // The memory space the operands are in (host when staged).
    Space space() const { return space_; }
    void finish() const;

private:
    const Operator::In *x_ = nullptr;
    const Operator::Out *y_ = nullptr;
    bool staged_ = false;  // a mix of host and device operands: in_ and out_ hold host twins
    Operator::In in_;
    Operator::Out out_, device_out_;
    std::vector<DistributedArray::Ptr> twins_;
    Space space_ = Space::host;
};

// Host twins made so far by this process (HostStage, and host-only callbacks on device data):
// a device solve that never leaves the device makes none. For tests and benchmarks.
int64_t twins_made();
void count_twin();

// y = Op x (or Op^H): continues the caller's agreement ag on op's communicator (the operands
// resolved inside it), checks the operands, takes the Work, agrees, applies. Operands all in
// one memory space run there; a mix of host and device runs on host twins. Collective.
// Dtypes follow NumPy's promotion (plm_op_apply): the members of x share one dtype dx, those
// of y are promote(op, dx); dx narrower than the operator's is widened into scratch, a complex
// dx on a real operator of its precision (float64 with complex64 or complex128) is applied to
// the real and imaginary parts; anything else (the operator would compute in another
// precision) is DTYPE_MISMATCH.
void apply(comm::Agreement &ag, const Operator &op, const Operator::In &x, const Operator::Out &y, bool adjoint);

// Runs a local step of a distributed apply and makes its outcome collective when it may fail
// (a user callback inside, or device work: CUDA calls can fail on one rank). Allocates nothing.
void agree_on(const Operator &op, const comm::Communicator &c, const std::optional<Error> &local,
              bool device = false);

// Local building blocks. Not collective.
// a: rows x cols elements of dt, row-major unless col_major; copied unless wrap (then it must
// outlive the operator).
// a_bytes / d_bytes: the buffer's size in bytes, which must equal what is read (INVALID_ARG).
Operator::Ptr dense(DType dt, int64_t rows, int64_t cols, const void *a, int64_t a_bytes, bool col_major, bool wrap);
Operator::Ptr diagonal(DType dt, int64_t n, const void *d, int64_t d_bytes);  // copied
Operator::Ptr identity(DType dt, int64_t n);
Operator::Ptr zero(DType dt, int64_t rows, int64_t cols);
// A user operator: host functions (the data in host memory) or device functions (device
// pointers and the stream to order their work on); [0] matvec, [1] rmatvec, either may be null.
// They return 0 on success; destroy(ctx) runs when the operator goes. Data in the other memory
// space are staged to buffers in the functions' space around each call.
struct CallbackFns {
    plm_op_fn host[2] = {nullptr, nullptr};
    plm_op_device_fn device[2] = {nullptr, nullptr};
};
Operator::Ptr callback(DType dt, int64_t rows, int64_t cols, const CallbackFns &fns, void *ctx,
                       void (*destroy)(void *));

// A distributed operator running user functions on whole arrays (plm_op_shell). call runs fn
// on handles lent for x and y (made by the C API, which owns the handle type); [0] matvec,
// [1] rmatvec, either may be null. destroy(ctx) runs when the operator goes. Not collective.
struct ShellFns {
    plm_op_shell_fn fn[2] = {nullptr, nullptr};
    void *ctx = nullptr;
    void (*destroy)(void *) = nullptr;
    int (*call)(plm_op_shell_fn fn, void *ctx, const DistributedArray &x, DistributedArray &y) = nullptr;
};
Operator::Ptr shell(DType dt, ArrayLayout::Ptr domain, ArrayLayout::Ptr range, const ShellFns &fns);

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
// StackedVStack maps one array (every part's domain: parts taking one array) to a stack, its
// adjoint sums. A stacked part adds all its members (stacks of stacks are flattened), so
// [Op; s Gradient] maps x to the stack [Op x, s D_0 x, ..., s D_n-1 x].
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

// Stencil operators (ops/basic/stencil.cpp) on an N-D model (dims, C order) split along axis 0 in
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
// The model of the stencil operators, checked (ops/basic/stencil.cpp; shared by every operator on
// an N-D model split along axis 0 in whole rows). check_model and check_axis check into ag
// and fold what must agree; add_rows adds this rank's rows to ag (before it runs), model_rows
// reads every rank's rows from it after (SIZE_MISMATCH alike on every rank when they do not
// sum to dims[0]); model_layout is that split as a 1-D SCATTER layout.
struct RowModel {
    DType dt = DType::f64;
    Shape dims;
    int64_t local_rows = -1;
};
RowModel check_model(comm::Agreement &ag, const StencilModel &s);
int check_axis(comm::Agreement &ag, const RowModel &m, int axis);
size_t add_rows(comm::Agreement &ag, const RowModel &m);
std::vector<int64_t> model_rows(const comm::Agreement &ag, const RowModel &m, size_t lane);
ArrayLayout::Ptr model_layout(const CommPtr &c, const RowModel &m, const std::vector<int64_t> &rows);
// What rank me of such a split receives along axis 0: `before` rows ahead of its block and
// `after` rows past it (as far as `reach` rows, from whichever ranks hold them, none for an
// empty block), and what it sends: alltoallv counts and displacements in elements (row_len
// elements a row), the ghosts received into one buffer, the `before` rows first.
struct GhostCounts {
    std::vector<int64_t> sc, sd, rc, rd;
    int64_t before = 0, after = 0;
};
GhostCounts ghost_counts(const std::vector<int64_t> &rows, int me, int64_t row_len, int64_t reach);
// NonStationaryConvolve1D (ops/signal/nonstat.cpp) along `axis` of the model: nfilt filters of nh
// (odd) taps, hs (nfilt x nh of the dtype, host memory, hs_bytes its size, copied) at the
// regular positions ih (nfilt of them, in [0, dims[axis])). Collective on c through ag.
Operator::Ptr nonstat_convolve1d(comm::Agreement &ag, const CommPtr &c, const StencilModel &m, int axis, int64_t nfilt,
                                 int64_t nh, const void *hs, int64_t hs_bytes, const int64_t *ih);

// Halo (ops/basic/halo.cpp): dims split over a process grid (empty: all ranks on the last axis),
// halo widths as in plm_op_halo (1, ndim or 2 ndim values). Collective.
Operator::Ptr halo(comm::Agreement &ag, const CommPtr &c, int dtype, const std::vector<int64_t> &dims,
                   const std::vector<int> &grid, const std::vector<int64_t> &widths);

// MatrixMult (ops/basic/matmul.cpp), Y = A X with A n x k, X k x m. kind: a plm_matmul_kind_t value.
// The blocks rank `rank` of nranks holds on a grid of grid_rows rows (0: chosen for the shape
// and kind, as documented at plm_matmul_blocks), each {row_begin, row_end, col_begin, col_end}.
// Pure; INVALID_ARG for bad arguments.
struct MatmulBlocks {
    int grid_rows = 1, grid_cols = 1, row = 0, col = 0;
    int64_t a[4] = {}, x[4] = {}, y[4] = {};
};
MatmulBlocks matmul_blocks(int kind, int nranks, int rank, int grid_rows, int64_t n, int64_t k, int64_t m);
// a: this rank's block of A, row-major, copied (may be NULL when empty), a_bytes its size in
// bytes (checked in the agreement). Domain and range: 1-D SCATTER of the X and Y blocks (block
// kind: mask {grid column of each rank}). dtype: raw plm_dtype_t. Collective on c through ag
// (built on c).
Operator::Ptr matrix_mult(comm::Agreement &ag, const CommPtr &c, int kind, int grid_rows, int dtype, int64_t n,
                          int64_t k, int64_t m, const void *a, int64_t a_bytes);

// Fredholm1 and MDC (ops/signal/): kernels split along their first axis (slices, frequencies)
// over the ranks, any count per rank (0 included); vectors BROADCAST. g: this rank's slices,
// host memory, copied; dtype raw plm_dtype_t. Collective on c through ag (built on c).
// Fredholm1: G (nsl, nx, ny), domain (total, ny, nz), range (total, nx, nz).
Operator::Ptr fredholm1(comm::Agreement &ag, const CommPtr &c, int dtype, int64_t nsl, int64_t nx, int64_t ny,
                        int64_t nz, const void *g, int64_t g_bytes, bool save_gt);
// MDC: G (nf, ns, nr) complex, this rank's frequencies; the operator is real, domain (nt, nr, nv),
// range (nt, ns, nv). NOT_SUPPORTED without FFTW.
struct MdcArgs {
    int dtype = PLM_COMPLEX128;
    int64_t nt = 0, nv = 0, nfreq = 0, nf = 0, ns = 0, nr = 0;
    double dt = 1, dr = 1;
    bool twosided = true, conj = false, prescaled = false, save_gt = true;
    const void *g = nullptr;
    int64_t g_bytes = 0;
};
Operator::Ptr mdc(comm::Agreement &ag, const CommPtr &c, const MdcArgs &a);

}  // namespace plm::ops
