// Solver entry points (pylopsmpi/solver.h): the solver-info object, CG, CGLS, ISTA, FISTA and
// power iteration; handle checks and conversions only, the work is in src/solvers/.
#include <memory>

#include "c_api/op_api.hpp"

using namespace plm;
using namespace plm::detail;

namespace {

// Hands the callback's context to its destroy function (the info owns it).
void release_callback(plm_solver_info_s &h)
{
    if (h.callback_destroy) h.callback_destroy(h.callback_ctx);
    h.callback = nullptr;
    h.callback_ctx = nullptr;
    h.callback_destroy = nullptr;
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

PLM_API plm_status_t plm_solve_cgls(plm_const_op_t op, plm_const_array_t y, plm_array_t x, int64_t niter,
                                    double damp, double tol, plm_solver_info_t info)
{
    return solve("solve_cgls", op, y, x, info,
                 [&](comm::Agreement &ag, const ops::Operator &o, const solvers::Parts &ya, const solvers::Parts &xa,
                     solvers::Info &i, const solvers::Monitor &mon) {
                     solvers::cgls(ag, o, ya, xa, niter, damp, tol, i, mon);
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

}  // extern "C"
