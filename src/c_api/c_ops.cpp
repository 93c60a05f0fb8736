// Operator and solver entry points: handle checks and conversions only; the work is in
// src/ops/ and src/solvers/.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <memory>
#include <type_traits>

#include "c_api/guard.hpp"

using namespace plm;
using detail::guard;
using detail::op_of;

namespace {

// Wraps a new operator in a handle (allocated first, so a failure leaks nothing).
template <typename F> plm_status_t make(plm_op_t *out, F &&build)
{
    return guard([&] {
        detail::clear_out(out, "out");
        std::unique_ptr<plm_op_s> h(new plm_op_s());
        h->op = build();
        h->magic = detail::kOpMagic;
        *out = h.release();
    });
}

const ops::Operator &distributed_op(plm_const_op_t op)
{
    const ops::Operator &o = *op_of(op);
    PLM_REQUIRE(!o.is_local(), PLM_ERR_INVALID_ARG, "a local operator has no domain or range layout");
    return o;
}

const ops::Operator &plain_op(plm_const_op_t op)
{
    const ops::Operator &o = distributed_op(op);
    PLM_REQUIRE(!o.stacked(), PLM_ERR_INVALID_ARG,
                "a stacked operator maps stacks: use plm_op_domain_part / plm_op_range_part and the *_stacked calls");
    return o;
}

std::vector<ops::Operator::Ptr> op_list(int n, const plm_const_op_t *ops)
{
    PLM_REQUIRE(n >= 1 && ops, PLM_ERR_INVALID_ARG, "n must be >= 1 with a list of operators (n = %d)", n);
    std::vector<ops::Operator::Ptr> v;
    for (int i = 0; i < n; ++i) v.push_back(op_of(ops[i]));
    return v;
}

// A collective constructor on comm: the handle is allocated inside the agreement, which
// build() runs.
template <typename F> plm_status_t make_on(plm_comm_t comm, const char *what, plm_op_t *out, F &&build)
{
    return guard([&] {
        if (out) *out = nullptr;
        comm::Communicator &c = detail::comm_of(comm);
        comm::Agreement ag(c, what);
        std::unique_ptr<plm_op_s> h;
        ag.check([&] {
            detail::clear_out(out, "out");
            h.reset(new plm_op_s());
        });
        h->op = build(ag, comm->comm);
        h->magic = detail::kOpMagic;
        *out = h.release();
    });
}

// n values of a caller's array (NULL: n copies of fallback), read inside the agreement.
template <typename T> std::vector<T> values(comm::Agreement &ag, int n, const T *v, T fallback, const char *what)
{
    std::vector<T> out;
    ag.check([&] {
        PLM_REQUIRE(n >= 0, PLM_ERR_INVALID_ARG, "%s: a negative count (%d)", what, n);
        out = v ? std::vector<T>(v, v + n) : std::vector<T>(static_cast<size_t>(n), fallback);
    });
    return out;
}

// A stack or block-diagonal: the handles become this rank's parts inside the agreement.
template <typename F>
plm_status_t make_stack(plm_comm_t comm, int n, const plm_const_op_t *parts, const char *what, plm_op_t *out, F &&build)
{
    return make_on(comm, what, out, [&](comm::Agreement &ag, const CommPtr &c) {
        std::vector<ops::Operator::Ptr> list;
        ag.check([&] {
            PLM_REQUIRE(n >= 1 && parts, PLM_ERR_INVALID_ARG, "%s needs n >= 1 local operators (n = %d)", what, n);
            for (int i = 0; i < n; ++i) list.push_back(op_of(parts[i]));
        });
        return build(ag, c, std::move(list));
    });
}

// Operands are arrays or stacks: either becomes a list of arrays (stack members in order).
solvers::Parts parts_of(plm_const_array_t a)
{
    return {const_cast<DistributedArray *>(&detail::array_of(a))};
}

solvers::Parts parts_of(plm_const_stacked_t s)
{
    solvers::Parts p;
    for (const DistributedArray::Ptr &m : detail::stack_of(s).members()) p.push_back(m.get());
    return p;
}

// An apply on arrays or stacks: the handles are resolved inside the operator's agreement, the
// rest is ops::apply's.
template <typename In, typename Out> plm_status_t apply(plm_const_op_t op, In in, Out out, bool adjoint)
{
    return guard([&] {
        const ops::Operator &o = distributed_op(op);
        comm::Agreement ag(o.comm(), adjoint ? "op_apply_adjoint" : "op_apply");
        ops::Operator::In x;
        ops::Operator::Out y;
        ag.check([&] {
            const solvers::Parts xs = parts_of(in);
            x.assign(xs.begin(), xs.end());
            y = parts_of(out);
        });
        ops::apply(ag, o, x, y, adjoint);
    });
}

solvers::Info &info_of(plm_solver_info_s *h)
{
    PLM_REQUIRE(h && h->magic == detail::kInfoMagic, PLM_ERR_INVALID_ARG, "plm_solver_info_t is not valid");
    return h->info;
}

const solvers::Info &info_of(const plm_solver_info_s *h) { return info_of(const_cast<plm_solver_info_s *>(h)); }

// Hands the callback's context to its destroy function (the info owns it).
void release_callback(plm_solver_info_s &h)
{
    if (h.callback_destroy) h.callback_destroy(h.callback_ctx);
    h.callback = nullptr;
    h.callback_ctx = nullptr;
    h.callback_destroy = nullptr;
}

// The info's show flag and callback as a solver monitor; the callback sees x when it is an
// array, NULL for a stack.
template <typename XT> solvers::Monitor monitor_of(const plm_solver_info_s *info, XT x)
{
    solvers::Monitor mon;
    if (!info) return mon;
    mon.show = info->show;
    if (plm_solver_callback_fn fn = info->callback) {
        void *ctx = info->callback_ctx;
        plm_const_array_t xa = nullptr;
        if constexpr (std::is_same_v<XT, plm_array_t>) xa = x;
        mon.stop = [fn, ctx, xa](int64_t it, double cost) { return fn(ctx, it, xa, cost) != 0; };
    }
    return mon;
}

// A solve on arrays or stacks: the handles (operands, info) are resolved inside the operator's
// agreement, the rest is the solver's.
template <typename YT, typename XT, typename F>
plm_status_t solve(const char *what, plm_const_op_t op, YT y, XT x, plm_solver_info_t info, F &&run)
{
    return guard([&] {
        const ops::Operator &o = distributed_op(op);
        comm::Agreement ag(o.comm(), what);
        solvers::Parts yp, xp;
        solvers::Info local, *inf = &local;
        solvers::Monitor mon;
        ag.check([&] {
            yp = parts_of(y);
            xp = parts_of(x);
            if (info) inf = &info_of(info);
            mon = monitor_of(info, x);
        });
        run(ag, o, yp, xp, *inf, mon);
    });
}

// Layout of member i of the domain or the range, as a new handle.
plm_status_t part_layout(plm_const_op_t op, int i, plm_layout_t *layout, bool range)
{
    return guard([&] {
        detail::clear_out(layout, "layout");
        const ops::Operator &o = distributed_op(op);
        const std::vector<ArrayLayout::Ptr> p = range ? o.range_parts() : o.domain_parts();
        PLM_REQUIRE(i >= 0 && i < static_cast<int>(p.size()), PLM_ERR_INVALID_ARG, "part %d outside 0..%zu", i,
                    p.size() - 1);
        *layout = detail::new_layout_handle(p[static_cast<size_t>(i)]);
    });
}

plm_status_t new_array_on(plm_const_op_t op, int memory, plm_array_t *out, bool range)
{
    return guard([&] {
        detail::clear_out(out, "out");
        const ops::Operator &o = plain_op(op);
        std::unique_ptr<plm_array_s> h(detail::new_array_handle(nullptr));
        h->array = DistributedArray::create_from_layout(range ? o.range() : o.domain(), to_public(o.dtype()),
                                                        memory, nullptr, 0);
        h->comm_handle.comm = h->array->base_ptr();
        *out = h.release();
    });
}

plm_status_t sparse(bool fista, plm_const_op_t op, plm_const_array_t y, plm_array_t x, int64_t niter, double eps,
                    double alpha, int k, const double *decay, int monitorres, double tol, plm_solver_info_t info)
{
    return solve(fista ? "solve_fista" : "solve_ista", op, y, x, info,
                 [&](comm::Agreement &ag, const ops::Operator &, const solvers::Parts &yp, const solvers::Parts &xp,
                     solvers::Info &i, const solvers::Monitor &mon) {
                     solvers::Sparse o;
                     ag.check([&] {
                         o.niter = niter;
                         o.eps = eps;
                         o.alpha = alpha;
                         o.tol = tol;
                         o.kind = k;
                         o.monitorres = monitorres != 0;
                         o.fista = fista;
                         if (decay && niter > 0) o.decay.assign(decay, decay + niter);
                     });
                     solvers::ista(ag, op_of(op), yp, xp, o, i, mon);
                 });
}

}  // namespace

extern "C" {

PLM_API plm_status_t plm_op_dense(plm_dtype_t dtype, int64_t rows, int64_t cols, const void *a, int64_t a_bytes,
                                  int col_major, int wrap, plm_op_t *out)
{
    return make(out, [&] {
        return ops::dense(from_public(enum_value(dtype)), rows, cols, a, a_bytes, col_major != 0, wrap != 0);
    });
}

PLM_API plm_status_t plm_op_diagonal(plm_dtype_t dtype, int64_t n, const void *d, int64_t d_bytes, plm_op_t *out)
{
    return make(out, [&] { return ops::diagonal(from_public(enum_value(dtype)), n, d, d_bytes); });
}

PLM_API plm_status_t plm_op_identity(plm_dtype_t dtype, int64_t n, plm_op_t *out)
{
    return make(out, [&] { return ops::identity(from_public(enum_value(dtype)), n); });
}

PLM_API plm_status_t plm_op_zero(plm_dtype_t dtype, int64_t rows, int64_t cols, plm_op_t *out)
{
    return make(out, [&] { return ops::zero(from_public(enum_value(dtype)), rows, cols); });
}

PLM_API plm_status_t plm_op_callback(plm_dtype_t dtype, int64_t rows, int64_t cols, plm_op_fn matvec,
                                     plm_op_fn rmatvec, void *ctx, void (*destroy)(void *), plm_op_t *out)
{
    return make(out, [&] {
        ops::CallbackFns f;
        f.host[0] = matvec;
        f.host[1] = rmatvec;
        return ops::callback(from_public(enum_value(dtype)), rows, cols, f, ctx, destroy);
    });
}

// Runs a shell function on handles lent for the duration of the call: they own nothing (an
// aliasing pointer allocates nothing), plm_array_destroy() refuses them, and they end with the call.
static int call_shell(plm_op_shell_fn fn, void *ctx, const DistributedArray &x, DistributedArray &y)
{
    auto lend = [](plm_array_s &h, DistributedArray &a) {
        h.magic = detail::kArrayMagic;
        h.array = DistributedArray::Ptr(std::shared_ptr<void>(), &a);
        h.comm_handle.magic = detail::kCommMagic;
        h.comm_handle.comm = a.base_ptr();
        h.comm_handle.borrowed = true;
        h.borrowed = true;
    };
    plm_array_s hx, hy;
    lend(hx, const_cast<DistributedArray &>(x));
    lend(hy, y);
    return fn(ctx, &hx, &hy);
}

PLM_API plm_status_t plm_op_shell(plm_layout_t domain, plm_layout_t range, plm_dtype_t dtype, plm_op_shell_fn matvec,
                                  plm_op_shell_fn rmatvec, void *ctx, void (*destroy)(void *), plm_op_t *out)
{
    return make(out, [&] {
        ops::ShellFns f;
        f.fn[0] = matvec;
        f.fn[1] = rmatvec;
        f.ctx = ctx;
        f.destroy = destroy;
        f.call = call_shell;
        return ops::shell(from_public(enum_value(dtype)), detail::layout_of(domain), detail::layout_of(range), f);
    });
}

PLM_API plm_status_t plm_op_callback_device(plm_dtype_t dtype, int64_t rows, int64_t cols, plm_op_device_fn matvec,
                                            plm_op_device_fn rmatvec, void *ctx, void (*destroy)(void *),
                                            plm_op_t *out)
{
    return make(out, [&] {
        ops::CallbackFns f;
        f.device[0] = matvec;
        f.device[1] = rmatvec;
        return ops::callback(from_public(enum_value(dtype)), rows, cols, f, ctx, destroy);
    });
}

PLM_API plm_status_t plm_op_native(plm_const_op_t op, plm_memory_t memory, int *native)
{
    return guard([&] {
        const ops::Operator &o = *op_of(op);
        PLM_REQUIRE(native, PLM_ERR_INVALID_ARG, "native is NULL");
        *native = o.native(space_from_public(enum_value(memory))) ? 1 : 0;
    });
}

PLM_API plm_status_t plm_op_blockdiag(plm_comm_t comm, int n, const plm_const_op_t *parts, int nmask, const int *mask,
                                      plm_op_t *out)
{
    return make_stack(comm, n, parts, "op_blockdiag", out, [&](comm::Agreement &ag, const CommPtr &c, auto list) {
        std::vector<int> m;
        ag.check([&] {
            PLM_REQUIRE(nmask >= 0 && (nmask == 0) == (mask == nullptr), PLM_ERR_INVALID_ARG,
                        "mask must be NULL exactly when nmask is 0");
            if (mask) m.assign(mask, mask + nmask);
        });
        return ops::block_diag(ag, c, std::move(list), std::move(m));
    });
}

PLM_API plm_status_t plm_op_first_derivative(plm_comm_t comm, plm_dtype_t dtype, int ndim, const int64_t *dims,
                                             int64_t local_rows, int axis, double sampling, plm_deriv_kind_t kind,
                                             int order, int edge, plm_op_t *out)
{
    return make_on(comm, "op_first_derivative", out, [&](comm::Agreement &ag, const CommPtr &c) {
        return ops::first_derivative(ag, c, {enum_value(dtype), ndim, dims, local_rows}, axis, sampling,
                                     enum_value(kind), order, edge != 0);
    });
}

PLM_API plm_status_t plm_op_second_derivative(plm_comm_t comm, plm_dtype_t dtype, int ndim, const int64_t *dims,
                                              int64_t local_rows, int axis, double sampling, plm_deriv_kind_t kind,
                                              int edge, plm_op_t *out)
{
    return make_on(comm, "op_second_derivative", out, [&](comm::Agreement &ag, const CommPtr &c) {
        return ops::second_derivative(ag, c, {enum_value(dtype), ndim, dims, local_rows}, axis, sampling,
                                      enum_value(kind), edge != 0);
    });
}

PLM_API plm_status_t plm_op_laplacian(plm_comm_t comm, plm_dtype_t dtype, int ndim, const int64_t *dims,
                                      int64_t local_rows, int naxes, const int *axes, const double *weights,
                                      const double *sampling, plm_deriv_kind_t kind, int edge, plm_op_t *out)
{
    return make_on(comm, "op_laplacian", out, [&](comm::Agreement &ag, const CommPtr &c) {
        ag.check([&] { PLM_REQUIRE(axes, PLM_ERR_INVALID_ARG, "axes is NULL"); });
        const std::vector<int> a = values(ag, naxes, axes, 0, "axes");
        const std::vector<double> w = values(ag, naxes, weights, 1.0, "weights");
        const std::vector<double> s = values(ag, naxes, sampling, 1.0, "sampling");
        return ops::laplacian(ag, c, {enum_value(dtype), ndim, dims, local_rows}, a, w, s, enum_value(kind), edge != 0);
    });
}

PLM_API plm_status_t plm_op_gradient(plm_comm_t comm, plm_dtype_t dtype, int ndim, const int64_t *dims,
                                     int64_t local_rows, const double *sampling, plm_deriv_kind_t kind, int edge,
                                     plm_op_t *out)
{
    return make_on(comm, "op_gradient", out, [&](comm::Agreement &ag, const CommPtr &c) {
        const std::vector<double> s = values(ag, sampling ? ndim : 0, sampling, 1.0, "sampling");
        return ops::gradient(ag, c, {enum_value(dtype), ndim, dims, local_rows}, s, enum_value(kind), edge != 0);
    });
}

PLM_API plm_status_t plm_op_halo(plm_comm_t comm, plm_dtype_t dtype, int ndim, const int64_t *dims, const int *grid,
                                 int nhalo, const int64_t *halo, plm_op_t *out)
{
    return make_on(comm, "op_halo", out, [&](comm::Agreement &ag, const CommPtr &c) {
        ag.check([&] {
            PLM_REQUIRE(ndim >= 1 && dims, PLM_ERR_INVALID_ARG, "halo needs ndim >= 1 and dims (ndim = %d)", ndim);
            PLM_REQUIRE(nhalo >= 1 && halo, PLM_ERR_INVALID_ARG, "halo needs nhalo >= 1 widths (nhalo = %d)", nhalo);
        });
        const std::vector<int64_t> d = values(ag, ag.ok() ? ndim : 0, dims, int64_t{0}, "dims");
        const std::vector<int> g = values(ag, grid && ag.ok() ? ndim : 0, grid, 0, "grid");
        const std::vector<int64_t> h = values(ag, ag.ok() ? nhalo : 0, halo, int64_t{0}, "halo");
        return ops::halo(ag, c, enum_value(dtype), d, g, h);
    });
}

PLM_API plm_status_t plm_op_nonstationary_convolve1d(plm_comm_t comm, plm_dtype_t dtype, int ndim, const int64_t *dims,
                                                     int64_t local_rows, int axis, int64_t nfilt, int64_t nh,
                                                     const void *hs, int64_t hs_bytes, const int64_t *ih,
                                                     plm_op_t *out)
{
    return make_on(comm, "op_nonstationary_convolve1d", out, [&](comm::Agreement &ag, const CommPtr &c) {
        return ops::nonstat_convolve1d(ag, c, {enum_value(dtype), ndim, dims, local_rows}, axis, nfilt, nh, hs,
                                       hs_bytes, ih);
    });
}

PLM_API plm_status_t plm_matmul_blocks(plm_matmul_kind_t kind, int nranks, int rank, int grid_rows, int64_t n,
                                       int64_t k, int64_t m, int grid[4], int64_t a[4], int64_t x[4], int64_t y[4])
{
    return guard([&] {
        const ops::MatmulBlocks b = ops::matmul_blocks(enum_value(kind), nranks, rank, grid_rows, n, k, m);
        const int g[4] = {b.grid_rows, b.grid_cols, b.row, b.col};
        if (grid) std::copy(g, g + 4, grid);
        if (a) std::copy(b.a, b.a + 4, a);
        if (x) std::copy(b.x, b.x + 4, x);
        if (y) std::copy(b.y, b.y + 4, y);
    });
}

PLM_API plm_status_t plm_op_matrix_mult(plm_comm_t comm, plm_matmul_kind_t kind, int grid_rows, plm_dtype_t dtype,
                                        int64_t n, int64_t k, int64_t m, const void *a, int64_t a_bytes,
                                        plm_op_t *out)
{
    return make_on(comm, "op_matrix_mult", out, [&](comm::Agreement &ag, const CommPtr &c) {
        return ops::matrix_mult(ag, c, enum_value(kind), grid_rows, enum_value(dtype), n, k, m, a, a_bytes);
    });
}

PLM_API plm_status_t plm_op_fredholm1(plm_comm_t comm, plm_dtype_t dtype, int64_t nsl, int64_t nx, int64_t ny,
                                      int64_t nz, const void *g, int64_t g_bytes, int save_gt, int usematmul,
                                      plm_op_t *out)
{
    (void)usematmul;  // a hint: every path is one gemm per slice
    return make_on(comm, "op_fredholm1", out, [&](comm::Agreement &ag, const CommPtr &c) {
        return ops::fredholm1(ag, c, enum_value(dtype), nsl, nx, ny, nz, g, g_bytes, save_gt != 0);
    });
}

PLM_API plm_status_t plm_op_mdc(plm_comm_t comm, plm_dtype_t dtype, int64_t nt, int64_t nv, int64_t nfreq, int64_t nf,
                                int64_t ns, int64_t nr, double dt, double dr, int twosided, int conj, int prescaled,
                                int save_gt, const void *g, int64_t g_bytes, plm_op_t *out)
{
    return make_on(comm, "op_mdc", out, [&](comm::Agreement &ag, const CommPtr &c) {
        ops::MdcArgs a;
        a.dtype = enum_value(dtype);
        a.nt = nt;
        a.nv = nv;
        a.nfreq = nfreq;
        a.nf = nf;
        a.ns = ns;
        a.nr = nr;
        a.dt = dt;
        a.dr = dr;
        a.twosided = twosided != 0;
        a.conj = conj != 0;
        a.prescaled = prescaled != 0;
        a.save_gt = save_gt != 0;
        a.g = g;
        a.g_bytes = g_bytes;
        return ops::mdc(ag, c, a);
    });
}

PLM_API plm_status_t plm_op_vstack(plm_comm_t comm, int n, const plm_const_op_t *parts, plm_op_t *out)
{
    return make_stack(comm, n, parts, "op_vstack", out, [](comm::Agreement &ag, const CommPtr &c, auto list) {
        return ops::vstack(ag, c, std::move(list));
    });
}

PLM_API plm_status_t plm_op_hstack(plm_comm_t comm, int n, const plm_const_op_t *parts, plm_op_t *out)
{
    return make_stack(comm, n, parts, "op_hstack", out, [](comm::Agreement &ag, const CommPtr &c, auto list) {
        return ops::hstack(ag, c, std::move(list));
    });
}

PLM_API plm_status_t plm_op_adjoint(plm_const_op_t a, plm_op_t *out)
{
    return make(out, [&] { return ops::adjoint(op_of(a)); });
}

PLM_API plm_status_t plm_op_scale(plm_const_op_t a, double alpha_re, double alpha_im, plm_op_t *out)
{
    return make(out, [&] {
        const ops::Operator::Ptr &o = op_of(a);
        return ops::scaled(o, make_scalar(o->dtype(), alpha_re, alpha_im, "plm_op_scale"));
    });
}

PLM_API plm_status_t plm_op_sum(plm_const_op_t a, plm_const_op_t b, plm_op_t *out)
{
    return make(out, [&] { return ops::sum(op_of(a), op_of(b)); });
}

PLM_API plm_status_t plm_op_difference(plm_const_op_t a, plm_const_op_t b, plm_op_t *out)
{
    return make(out, [&] {
        const ops::Operator::Ptr &ob = op_of(b);
        return ops::sum(op_of(a), ops::scaled(ob, make_scalar(ob->dtype(), -1, 0, "plm_op_difference")));
    });
}

PLM_API plm_status_t plm_op_product(plm_const_op_t a, plm_const_op_t b, plm_op_t *out)
{
    return make(out, [&] { return ops::product(op_of(a), op_of(b)); });
}

PLM_API plm_status_t plm_op_destroy(plm_op_t *op)
{
    return guard([&] {
        if (!op || !*op) return;
        op_of(*op);
        (*op)->magic = 0;
        delete *op;
        *op = nullptr;
    });
}

PLM_API plm_status_t plm_op_shape(plm_const_op_t op, int64_t *rows, int64_t *cols)
{
    return guard([&] {
        const ops::Operator &o = *op_of(op);
        PLM_REQUIRE(rows && cols, PLM_ERR_INVALID_ARG, "rows or cols is NULL");
        *rows = o.rows();
        *cols = o.cols();
    });
}

PLM_API plm_status_t plm_op_dtype(plm_const_op_t op, plm_dtype_t *dtype)
{
    return guard([&] {
        const ops::Operator &o = *op_of(op);
        PLM_REQUIRE(dtype, PLM_ERR_INVALID_ARG, "dtype is NULL");
        *dtype = to_public(o.dtype());
    });
}

PLM_API plm_status_t plm_op_is_local(plm_const_op_t op, int *is_local)
{
    return guard([&] {
        const ops::Operator &o = *op_of(op);
        PLM_REQUIRE(is_local, PLM_ERR_INVALID_ARG, "is_local is NULL");
        *is_local = o.is_local() ? 1 : 0;
    });
}

PLM_API plm_status_t plm_op_domain(plm_const_op_t op, plm_layout_t *domain)
{
    return guard([&] {
        detail::clear_out(domain, "domain");
        *domain = detail::new_layout_handle(plain_op(op).domain());
    });
}

PLM_API plm_status_t plm_op_range(plm_const_op_t op, plm_layout_t *range)
{
    return guard([&] {
        detail::clear_out(range, "range");
        *range = detail::new_layout_handle(plain_op(op).range());
    });
}

PLM_API plm_status_t plm_op_stacked_blockdiag(int n, const plm_const_op_t *ops, plm_op_t *out)
{
    return make(out, [&] { return ops::stacked_block_diag(op_list(n, ops)); });
}

PLM_API plm_status_t plm_op_stacked_vstack(int n, const plm_const_op_t *ops, plm_op_t *out)
{
    return make(out, [&] { return ops::stacked_vstack(op_list(n, ops)); });
}

PLM_API plm_status_t plm_op_parts(plm_const_op_t op, int *n_domain, int *n_range)
{
    return guard([&] {
        const ops::Operator &o = distributed_op(op);
        PLM_REQUIRE(n_domain && n_range, PLM_ERR_INVALID_ARG, "n_domain or n_range is NULL");
        *n_domain = static_cast<int>(o.domain_parts().size());
        *n_range = static_cast<int>(o.range_parts().size());
    });
}

PLM_API plm_status_t plm_op_domain_part(plm_const_op_t op, int i, plm_layout_t *layout)
{
    return part_layout(op, i, layout, false);
}

PLM_API plm_status_t plm_op_range_part(plm_const_op_t op, int i, plm_layout_t *layout)
{
    return part_layout(op, i, layout, true);
}

PLM_API plm_status_t plm_op_apply_stacked(plm_const_op_t op, plm_const_stacked_t x, plm_stacked_t y)
{
    return apply(op, x, static_cast<plm_const_stacked_t>(y), false);
}

PLM_API plm_status_t plm_op_apply_adjoint_stacked(plm_const_op_t op, plm_const_stacked_t y, plm_stacked_t x)
{
    return apply(op, y, static_cast<plm_const_stacked_t>(x), true);
}

PLM_API plm_status_t plm_solve_cg_stacked(plm_const_op_t op, plm_const_stacked_t y, plm_stacked_t x, int64_t niter,
                                          double tol, plm_solver_info_t info)
{
    return solve("solve_cg", op, y, static_cast<plm_const_stacked_t>(x), info,
                 [&](comm::Agreement &ag, const ops::Operator &o, const solvers::Parts &ya, const solvers::Parts &xa,
                     solvers::Info &i, const solvers::Monitor &mon) { solvers::cg(ag, o, ya, xa, niter, tol, i, mon); });
}

PLM_API plm_status_t plm_solve_cgls_stacked(plm_const_op_t op, plm_const_stacked_t y, plm_stacked_t x,
                                            int64_t niter, double damp, double tol, plm_solver_info_t info)
{
    return solve("solve_cgls", op, y, static_cast<plm_const_stacked_t>(x), info,
                 [&](comm::Agreement &ag, const ops::Operator &o, const solvers::Parts &ya, const solvers::Parts &xa,
                     solvers::Info &i, const solvers::Monitor &mon) {
                     solvers::cgls(ag, o, ya, xa, niter, damp, tol, i, mon);
                 });
}

PLM_API plm_status_t plm_op_apply(plm_const_op_t op, plm_const_array_t x, plm_array_t y)
{
    return apply(op, x, static_cast<plm_const_array_t>(y), false);
}

PLM_API plm_status_t plm_op_apply_adjoint(plm_const_op_t op, plm_const_array_t y, plm_array_t x)
{
    return apply(op, y, static_cast<plm_const_array_t>(x), true);
}

PLM_API plm_status_t plm_op_dottest(plm_const_op_t op, double rtol, int *passed, double *yy, double *xx)
{
    return guard([&] {
        const ops::Operator &o = distributed_op(op);
        comm::Agreement ag(o.comm(), "op_dottest");
        ag.check([&] { PLM_REQUIRE(passed, PLM_ERR_INVALID_ARG, "passed is NULL"); });
        const solvers::DotTest t = solvers::dottest(ag, o, rtol);
        *passed = t.passed ? 1 : 0;
        if (yy) {
            yy[0] = t.yy_re;
            yy[1] = t.yy_im;
        }
        if (xx) {
            xx[0] = t.xx_re;
            xx[1] = t.xx_im;
        }
    });
}

PLM_API plm_status_t plm_solver_info_create(plm_solver_info_t *info)
{
    return guard([&] {
        detail::clear_out(info, "info");
        auto *h = new plm_solver_info_s();
        h->magic = detail::kInfoMagic;
        *info = h;
    });
}

PLM_API plm_status_t plm_solver_info_destroy(plm_solver_info_t *info)
{
    return guard([&] {
        if (!info || !*info) return;
        info_of(*info);
        release_callback(**info);
        (*info)->magic = 0;
        delete *info;
        *info = nullptr;
    });
}

PLM_API plm_status_t plm_solver_info_reason(plm_const_solver_info_t info, plm_stop_reason_t *reason)
{
    return guard([&] {
        const solvers::Info &i = info_of(info);
        PLM_REQUIRE(reason, PLM_ERR_INVALID_ARG, "reason is NULL");
        *reason = static_cast<plm_stop_reason_t>(i.reason);
    });
}

PLM_API plm_status_t plm_solver_info_iterations(plm_const_solver_info_t info, int64_t *iterations)
{
    return guard([&] {
        const solvers::Info &i = info_of(info);
        PLM_REQUIRE(iterations, PLM_ERR_INVALID_ARG, "iterations is NULL");
        *iterations = i.iterations;
    });
}

PLM_API plm_status_t plm_solver_info_norms(plm_const_solver_info_t info, double *r1norm, double *r2norm)
{
    return guard([&] {
        const solvers::Info &i = info_of(info);
        PLM_REQUIRE(r1norm && r2norm, PLM_ERR_INVALID_ARG, "r1norm or r2norm is NULL");
        *r1norm = i.r1norm;
        *r2norm = i.r2norm;
    });
}

PLM_API plm_status_t plm_solver_info_cost(plm_const_solver_info_t info, double *cost, int64_t n, int64_t *n_written)
{
    return guard([&] {
        const solvers::Info &i = info_of(info);
        PLM_REQUIRE(n_written, PLM_ERR_INVALID_ARG, "n_written is NULL");
        const int64_t have = static_cast<int64_t>(i.cost.size());
        if (!cost) {
            *n_written = have;
            return;
        }
        PLM_REQUIRE(n >= 0, PLM_ERR_INVALID_ARG, "n is negative");
        *n_written = std::min(n, have);
        std::copy(i.cost.begin(), i.cost.begin() + *n_written, cost);
    });
}

PLM_API plm_status_t plm_solve_cg(plm_const_op_t op, plm_const_array_t y, plm_array_t x, int64_t niter, double tol,
                                  plm_solver_info_t info)
{
    return solve("solve_cg", op, y, x, info,
                 [&](comm::Agreement &ag, const ops::Operator &o, const solvers::Parts &ya, const solvers::Parts &xa,
                     solvers::Info &i, const solvers::Monitor &mon) { solvers::cg(ag, o, ya, xa, niter, tol, i, mon); });
}

PLM_API plm_status_t plm_solve_cgls(plm_const_op_t op, plm_const_array_t y, plm_array_t x, int64_t niter,
                                    double damp, double tol, plm_solver_info_t info)
{
    return solve("solve_cgls", op, y, x, info,
                 [&](comm::Agreement &ag, const ops::Operator &o, const solvers::Parts &ya, const solvers::Parts &xa,
                     solvers::Info &i, const solvers::Monitor &mon) {
                     solvers::cgls(ag, o, ya, xa, niter, damp, tol, i, mon);
                 });
}

PLM_API plm_status_t plm_op_transpose(plm_const_op_t a, plm_op_t *out)
{
    return make(out, [&] { return ops::transpose(op_of(a)); });
}

PLM_API plm_status_t plm_op_conj(plm_const_op_t a, plm_op_t *out)
{
    return make(out, [&] { return ops::conjugate(op_of(a)); });
}

PLM_API plm_status_t plm_op_power(plm_const_op_t a, int p, plm_op_t *out)
{
    return make(out, [&] { return ops::power(op_of(a), p); });
}

PLM_API plm_status_t plm_op_broadcast(plm_comm_t comm, plm_const_op_t local, plm_op_t *out)
{
    return make_stack(comm, 1, &local, "op_broadcast", out, [](comm::Agreement &ag, const CommPtr &c, auto list) {
        return ops::broadcast(ag, c, list.empty() ? nullptr : list.front());  // empty: a check failed
    });
}

PLM_API plm_status_t plm_op_new_domain_array(plm_const_op_t op, plm_memory_t memory, plm_array_t *x)
{
    return new_array_on(op, enum_value(memory), x, false);
}

PLM_API plm_status_t plm_op_new_range_array(plm_const_op_t op, plm_memory_t memory, plm_array_t *y)
{
    return new_array_on(op, enum_value(memory), y, true);
}

PLM_API plm_status_t plm_solver_info_set_show(plm_solver_info_t info, int show)
{
    return guard([&] {
        info_of(info);
        info->show = show != 0;
    });
}

PLM_API plm_status_t plm_solver_info_set_callback(plm_solver_info_t info, plm_solver_callback_fn fn, void *ctx,
                                                  void (*destroy)(void *ctx))
{
    return guard([&] {
        info_of(info);
        release_callback(*info);
        info->callback = fn;
        info->callback_ctx = fn ? ctx : nullptr;
        info->callback_destroy = fn ? destroy : nullptr;
    });
}

PLM_API plm_status_t plm_solve_ista(plm_const_op_t op, plm_const_array_t y, plm_array_t x, int64_t niter, double eps,
                                    double alpha, plm_thresh_t kind, const double *decay, int monitorres, double tol,
                                    plm_solver_info_t info)
{
    return sparse(false, op, y, x, niter, eps, alpha, enum_value(kind), decay, monitorres, tol, info);
}

PLM_API plm_status_t plm_solve_fista(plm_const_op_t op, plm_const_array_t y, plm_array_t x, int64_t niter, double eps,
                                     double alpha, plm_thresh_t kind, const double *decay, int monitorres, double tol,
                                     plm_solver_info_t info)
{
    return sparse(true, op, y, x, niter, eps, alpha, enum_value(kind), decay, monitorres, tol, info);
}

PLM_API plm_status_t plm_power_iteration(plm_const_op_t op, int64_t niter, double tol, uint64_t seed, double *eig,
                                         int64_t *iterations)
{
    return guard([&] {
        const ops::Operator &o = distributed_op(op);
        comm::Agreement ag(o.comm(), "power_iteration");
        ag.check([&] { PLM_REQUIRE(eig, PLM_ERR_INVALID_ARG, "eig is NULL"); });
        const solvers::Eigen e = solvers::power_iteration(ag, o, niter, tol, seed);
        eig[0] = e.re;
        eig[1] = e.im;
        if (iterations) *iterations = e.iterations;
    });
}


// ---- proximal solvers (the work is in solvers/proximal_solvers.cpp) ----

PLM_API plm_status_t plm_solve_proximal_gradient(plm_const_prox_t proxf, plm_const_prox_t proxg, plm_array_t x,
                                                 double tau, const double *epsg, int64_t n_epsg, double eta,
                                                 int64_t niter, plm_accel_t acceleration, double tol,
                                                 plm_solver_info_t info)
{
    return guard([&] {
        DistributedArray &xa = detail::array_of(x);
        comm::Agreement ag(xa.base(), "solve_proximal_gradient");
        static const solvers::Prox none;
        const solvers::Prox *f = &none, *g = &none;
        solvers::ProxGrad o;
        solvers::Info local, *inf = &local;
        solvers::Monitor mon;
        ag.check([&] {
            f = &detail::prox_of(proxf);
            g = &detail::prox_of(proxg);
            PLM_REQUIRE(epsg && n_epsg >= 1, PLM_ERR_INVALID_ARG, "epsg needs 1 or niter values (n_epsg = %lld)",
                        static_cast<long long>(n_epsg));
            o.epsg.assign(epsg, epsg + n_epsg);
            o.tau = tau;
            o.eta = eta;
            o.niter = niter;
            o.accel = enum_value(acceleration);
            o.tol = tol;
            if (info) inf = &info_of(info);
            mon = monitor_of(info, x);
        });
        solvers::proximal_gradient(ag, *f, *g, xa, o, *inf, mon);
    });
}

PLM_API plm_status_t plm_solve_admml2(plm_const_prox_t proxg, plm_const_op_t op, plm_const_array_t b,
                                      plm_const_op_t A, plm_array_t x, plm_array_t z, int use_z0, double tau,
                                      int64_t niter, int gfirst, int64_t inner_niter, double inner_tol,
                                      plm_solver_info_t info)
{
    return guard([&] {
        DistributedArray &xa = detail::array_of(x);
        comm::Agreement ag(xa.base(), "solve_admml2");
        static const solvers::Prox none;
        const solvers::Prox *g = &none;
        const DistributedArray *ba = &xa;
        DistributedArray *za = &xa;
        ops::Operator::Ptr o1, o2;
        solvers::Admm o;
        solvers::Info local, *inf = &local;
        solvers::Monitor mon;
        ag.check([&] {
            g = &detail::prox_of(proxg);
            o1 = op_of(op);
            o2 = op_of(A);
            ba = &detail::array_of(b);
            za = &detail::array_of(z);
            o.tau = tau;
            o.niter = niter;
            o.inner_niter = inner_niter;
            o.inner_tol = inner_tol;
            o.gfirst = gfirst != 0;
            o.use_z0 = use_z0 != 0;
            if (info) inf = &info_of(info);
            mon = monitor_of(info, x);
        });
        solvers::admml2(ag, *g, o1, *ba, o2, xa, solvers::AdmmZ{za, nullptr}, o, *inf, mon);
    });
}

PLM_API plm_status_t plm_solve_admml2_stacked(plm_const_prox_t proxg, plm_const_op_t op, plm_const_array_t b,
                                              plm_const_op_t A, plm_array_t x, plm_stacked_t z, int use_z0,
                                              double tau, int64_t niter, int gfirst, int64_t inner_niter,
                                              double inner_tol, plm_solver_info_t info)
{
    return guard([&] {
        DistributedArray &xa = detail::array_of(x);
        comm::Agreement ag(xa.base(), "solve_admml2_stacked");
        static const solvers::Prox none;
        const solvers::Prox *g = &none;
        const DistributedArray *ba = &xa;
        solvers::AdmmZ za{&xa, nullptr};  // a placeholder until z is checked (run() throws first)
        ops::Operator::Ptr o1, o2;
        solvers::Admm o;
        solvers::Info local, *inf = &local;
        solvers::Monitor mon;
        ag.check([&] {
            g = &detail::prox_of(proxg);
            o1 = op_of(op);
            o2 = op_of(A);
            ba = &detail::array_of(b);
            za = {nullptr, &detail::stack_of(z)};
            o.tau = tau;
            o.niter = niter;
            o.inner_niter = inner_niter;
            o.inner_tol = inner_tol;
            o.gfirst = gfirst != 0;
            o.use_z0 = use_z0 != 0;
            if (info) inf = &info_of(info);
            mon = monitor_of(info, x);
        });
        solvers::admml2(ag, *g, o1, *ba, o2, xa, za, o, *inf, mon);
    });
}

}  // extern "C"
