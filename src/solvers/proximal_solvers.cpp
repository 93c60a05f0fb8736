// ProximalGradient and ADMML2 (PyLops-MPI's proximal/optimization/primal.py), iterate for
// iterate. Every work vector, composite operator and the history's room are made before the
// solve's agreement; each iteration is then a sequence of agreed collective steps (operator
// applies, proximal steps and values, the inner CGLS of ADMML2, the callback's answer), each
// with its own agreement on the solve's communicator.
#include <cmath>
#include <cstdio>
#include <string>

#include "solvers/proximal.hpp"
#include "solvers/proximal_util.hpp"

namespace plm::solvers {

using namespace prox_util;
using namespace local;

namespace {

const char *accel_name(int a)
{
    return a == PLM_ACCEL_VANDENBERGHE ? "vandenberghe" : a == PLM_ACCEL_FISTA ? "fista" : "None";
}

// pyproximal's line search from y (ProximalGradient with backtracking): x = prox_{eps tau g}(y -
// tau grad f(y)), tau *= beta until f(x) <= f(y) + Re<grad f(y), x - y> + ||x - y||^2 / (2 tau)
// or niterback tries; tau is the last one tried times beta when none passed, as pyproximal
// leaves it. gr, w and d are work vectors of y's layout.
void backtrack(const Prox &f, const Prox &g, const DistributedArray &y, double eps, double beta, int64_t niterback,
               double &tau, DistributedArray &x, DistributedArray &gr, DistributedArray &w, DistributedArray &d)
{
    const comm::Communicator &c = y.base();
    {
        comm::Agreement a(c, "ProximalGradient grad");
        f.grad(a, y, gr);
    }
    double fy = 0;
    {
        comm::Agreement a(c, "ProximalGradient f");
        fy = f.value(a, y);
    }
    for (int64_t ib = 0; ib < niterback; ++ib) {
        copy(y, w);
        axpby(-tau, gr, 1, w);  // w = y - tau grad f(y)
        {
            comm::Agreement a(c, "ProximalGradient prox");
            g.apply(a, w, eps * tau, x);
        }
        copy(x, d);
        axpby(-1, y, 1, d);  // d = x - y
        double re = 0, im = 0, nd = 0;
        {
            comm::Agreement a(c, "ProximalGradient backtracking");
            const size_t dl = d.add_dot(a, &gr, true);
            const DistributedArray::NormLanes nl = d.add_norm(a, 2.0);
            a.run();
            d.read_dot(a, dl, &re, &im);
            nd = d.read_norm(a, nl);
        }
        double fx = 0;
        {
            comm::Agreement a(c, "ProximalGradient f");
            fx = f.value(a, x);
        }
        if (fx <= fy + re + (1.0 / (2.0 * tau)) * (nd * nd)) break;
        tau *= beta;
    }
}

}  // namespace

void proximal_gradient(comm::Agreement &ag, const Prox &f, const Prox &g, DistributedArray &x, const ProxGrad &o,
                       Info &info, const Monitor &mon)
{
    DistributedArray::Ptr y, xold, gr, w, d;
    ag.check([&] {
        PLM_REQUIRE(f.has_grad(), PLM_ERR_NOT_SUPPORTED, "ProximalGradient: proxf (%s) has no gradient", prox_name(f));
        PLM_REQUIRE(std::isfinite(o.tau) && o.tau > 0, PLM_ERR_INVALID_ARG,
                    "ProximalGradient: tau %g is not finite and > 0", o.tau);
        if (o.backtrack) {
            PLM_REQUIRE(o.beta > 0 && o.beta < 1, PLM_ERR_INVALID_ARG, "ProximalGradient: beta %g is not in (0, 1)",
                        o.beta);
            PLM_REQUIRE(o.niterback >= 1, PLM_ERR_INVALID_ARG, "ProximalGradient: niterback %lld is not >= 1",
                        static_cast<long long>(o.niterback));
            d = x.empty_like();
        }
        PLM_REQUIRE(o.eta > 0 && o.eta <= 1, PLM_ERR_INVALID_ARG, "ProximalGradient: eta %g is not in (0, 1]", o.eta);
        PLM_REQUIRE(o.niter >= 0, PLM_ERR_INVALID_ARG, "ProximalGradient: niter %lld is negative",
                    static_cast<long long>(o.niter));
        PLM_REQUIRE(o.accel == PLM_ACCEL_NONE || o.accel == PLM_ACCEL_VANDENBERGHE || o.accel == PLM_ACCEL_FISTA,
                    PLM_ERR_INVALID_ARG, "ProximalGradient: unknown acceleration %d", o.accel);
        PLM_REQUIRE(o.epsg.size() == 1 || static_cast<int64_t>(o.epsg.size()) == o.niter, PLM_ERR_SIZE_MISMATCH,
                    "ProximalGradient: epsg has %zu values: 1 or niter (%lld) are needed", o.epsg.size(),
                    static_cast<long long>(o.niter));
        PLM_REQUIRE(!x.has_mask(), PLM_ERR_NOT_SUPPORTED, "ProximalGradient: masked arrays are not supported");
        y = x.empty_like();
        xold = x.empty_like();
        gr = x.empty_like();
        w = x.empty_like();
        info = Info{};
        info.cost.reserve(static_cast<size_t>(o.niter));
    });
    x.fold_layout(ag);
    for (double v : {o.tau, o.eta, o.tol}) ag.fold_double(v);
    ag.fold(o.niter);
    ag.fold(o.accel);
    ag.fold(static_cast<int64_t>(o.epsg.size()));
    for (double v : o.epsg) ag.fold_double(v);
    ag.fold(o.backtrack);
    if (o.backtrack) {
        ag.fold_double(o.beta);
        ag.fold(o.niterback);
    }
    Callback cb(mon, x.base(), "ProximalGradient callback");
    cb.add(ag);
    ag.run();
    cb.read(ag);
    // J is computed when the tolerance needs it or some rank prints the table.
    const bool values = o.tol > 0 || cb.any_show();
    const bool print = mon.show && x.base().rank() == 0;
    const comm::Communicator &c = x.base();
    if (print) {
        std::printf("Accelerated Proximal Gradient (pylopsmpi)\n"
                    "---------------------------------------------------------\n"
                    "Proximal operator (f): %s\nProximal operator (g): %s\n",
                    prox_name(f), prox_name(g));
        if (o.backtrack) std::printf("tau = %g\tbacktrack = True\tbeta = %10e\n", o.tau, o.beta);
        if (o.epsg.size() == 1) std::printf("tau = %g\tepsg = %g\n", o.tau, o.epsg[0]);
        else std::printf("tau = %g\tepsg = Multi\n", o.tau);
        std::printf("niter = %lld\ttol = %g\tacceleration = %s\n\n", static_cast<long long>(o.niter), o.tol,
                    accel_name(o.accel));
        std::printf("   Itn       x[0]          f           g       J=f+eps*g       tau\n");
    }
    copy(x, *y);
    double tau = o.tau;  // backtracking changes it
    double t = 1, pfg = std::numeric_limits<double>::infinity();
    int64_t it = 0;
    Stop why = Stop::none;
    while (it < o.niter && why == Stop::none) {
        const double eps = o.epsg.size() == 1 ? o.epsg[0] : o.epsg[static_cast<size_t>(it)];
        copy(x, *xold);
        if (o.backtrack) backtrack(f, g, *y, eps, o.beta, o.niterback, tau, x, *gr, *w, *d);  // x from y
        DistributedArray &base = o.eta == 1.0 ? *y : x;
        if (!o.backtrack || o.eta != 1.0) {
            {
                comm::Agreement a(c, "ProximalGradient grad");
                f.grad(a, base, *gr);
            }
            copy(base, *w);
            axpby(-tau, *gr, 1, *w);  // w = base - tau grad f(base)
            {
                comm::Agreement a(c, "ProximalGradient prox");
                g.apply(a, *w, eps * tau, o.eta == 1.0 ? x : *w);
            }
        }
        if (o.eta != 1.0) {
            axpby(-1, x, 1, *w);     // prox - x
            axpby(o.eta, *w, 1, x);  // x + eta (prox - x)
        }
        double omega = 0;
        if (o.accel == PLM_ACCEL_VANDENBERGHE) {
            omega = static_cast<double>(it) / static_cast<double>(it + 3);
        } else if (o.accel == PLM_ACCEL_FISTA) {
            const double told = t;
            t = (1.0 + std::sqrt(1.0 + 4.0 * t * t)) / 2.0;
            omega = (told - 1.0) / t;
        }
        axpby(1, x, -1, *xold);  // x - x_old
        copy(x, *y);
        axpby(omega, *xold, 1, *y);  // y = x + omega (x - x_old)
        double pf = kNaN, pg = kNaN, J = kNaN;
        if (values) {
            comm::Agreement a1(c, "ProximalGradient f");
            pf = f.value(a1, x);
            comm::Agreement a2(c, "ProximalGradient g");
            pg = g.value(a2, x);
            J = pf + eps * pg;
            info.cost.push_back(J);
        }
        ++it;
        if (cb.stop(it, J)) why = Stop::callback;
        if (o.tol > 0) {
            const double old = pfg;
            pfg = J;
            if (std::abs(1.0 - pfg / old) < o.tol && why == Stop::none) why = Stop::tolerance;
        }
        if (print && row(it - 1, o.niter))
            std::printf("%6lld  %12.5e  %10.3e  %10.3e  %10.3e  %10.3e\n", static_cast<long long>(it), first(x), pf, pg,
                        J, tau);
    }
    if (print) std::printf("\n---------------------------------------------------------\n");
    if (o.tau_out) *o.tau_out = tau;
    info.iterations = it;
    info.reason = why == Stop::none ? Stop::iterations : why;
    info.r1norm = info.cost.empty() ? kNaN : info.cost.back();
    info.r2norm = info.r1norm;
}

void admml2(comm::Agreement &ag, const Prox &g, const ops::Operator::Ptr &op, const DistributedArray &b,
            const ops::Operator::Ptr &A, DistributedArray &x, const AdmmZ &z, const Admm &o, Info &info,
            const Monitor &mon)
{
    // z's members and, per member, u, A x, the prox's input w and the x-step's data bz.
    Parts zs;
    std::vector<DistributedArray::Ptr> u, ax, w, bz;
    StackedArray::Ptr ws, axs;  // a stacked z: w and A x as the stacks the prox takes
    DistributedArray::Ptr r;
    ops::Operator::Ptr reg;
    Info inner;
    // Operand lists of the applies and the x-step, made before the agreement.
    ops::Operator::In in_x;
    ops::Operator::Out out_ax, out_r;
    Parts ys, xs;
    ag.check([&] {
        require_plain_distributed(op, "ADMML2: Op");
        PLM_REQUIRE(A, PLM_ERR_INVALID_ARG, "ADMML2: A is NULL");
        if (!z.stack) require_plain_distributed(A, "ADMML2: A");
        PLM_REQUIRE(std::isfinite(o.tau) && o.tau > 0, PLM_ERR_INVALID_ARG, "ADMML2: tau %g is not finite and > 0",
                    o.tau);
        PLM_REQUIRE(o.niter >= 0 && o.inner_niter >= 0, PLM_ERR_INVALID_ARG, "ADMML2: niter or inner_niter is negative");
        PLM_REQUIRE(!z.stack || !g.single_only(), PLM_ERR_NOT_SUPPORTED,
                    "ADMML2: a stacked z takes a g that takes stacks (not L2, nor one holding an array)");
        if (z.stack)
            for (const DistributedArray::Ptr &m : z.stack->members()) zs.push_back(m.get());
        else
            zs = {z.array};
        PLM_REQUIRE(!x.has_mask(), PLM_ERR_NOT_SUPPORTED, "ADMML2: masked arrays are not supported");
        for (const DistributedArray *m : zs)
            PLM_REQUIRE(!m->has_mask(), PLM_ERR_NOT_SUPPORTED, "ADMML2: masked arrays are not supported");
        op->check_parts({&x}, {const_cast<DistributedArray *>(&b)}, false);
        A->check_parts({&x}, zs, false);
        const Scalar s = make_scalar(A->dtype(), 1.0 / std::sqrt(o.tau), 0, "ADMML2");
        std::vector<ops::Operator::Ptr> rows = {op};
        for (const ops::Operator::Ptr &p : ops::vstack_parts(A)) rows.push_back(ops::scaled(p, s));
        reg = ops::stacked_vstack(std::move(rows));
        ys = {const_cast<DistributedArray *>(&b)};
        for (const DistributedArray *m : zs) {
            u.push_back(m->empty_like());
            ax.push_back(m->empty_like());
            w.push_back(m->empty_like());
            bz.push_back(m->empty_like());
            out_ax.push_back(ax.back().get());
            ys.push_back(bz.back().get());
        }
        if (z.stack) {
            ws = StackedArray::create(w);
            axs = StackedArray::create(ax);
        }
        r = b.empty_like();
        in_x = {&x};
        out_r = {r.get()};
        xs = {&x};
        info = Info{};
        info.cost.reserve(static_cast<size_t>(o.niter));
    });
    x.fold_layout(ag);
    ag.fold(z.stack != nullptr);
    ag.fold(static_cast<int64_t>(zs.size()));
    for (const DistributedArray *m : zs) m->fold_layout(ag);
    for (double v : {o.tau, o.inner_tol}) ag.fold_double(v);
    ag.fold(o.niter);
    ag.fold(o.inner_niter);
    ag.fold(o.gfirst);
    ag.fold(o.use_z0);
    Callback cb(mon, x.base(), "ADMML2 callback");
    cb.add(ag);
    ag.run();
    cb.read(ag);
    const comm::Communicator &c = x.base();
    const bool values = cb.any_show();
    const bool print = mon.show && c.rank() == 0;
    if (print) {
        std::printf("ADMM (pylopsmpi)\n"
                    "---------------------------------------------------------\n"
                    "Proximal operator (g): %s\ntau = %10e\tniter = %lld\n\n",
                    prox_name(g), o.tau, static_cast<long long>(o.niter));
        std::printf("   Itn       x[0]          f           g       J = f + g\n");
    }
    const auto apply = [&](const ops::Operator &opr, const ops::Operator::Out &out, const char *what) {
        comm::Agreement a(c, what);
        ops::apply(a, opr, in_x, out, false);
    };
    if (!o.use_z0) apply(*A, zs, "ADMML2 z0 = A x0");
    for (const DistributedArray::Ptr &m : u) m->fill(make_scalar(m->dtype(), 0, 0, "ADMML2"));
    const double sqrttau = 1.0 / std::sqrt(o.tau);
    const auto xstep = [&] {  // CGLS on [Op; A / sqrt(tau)] x = [b; (z - u) / sqrt(tau)], from x
        for (size_t i = 0; i < zs.size(); ++i) {
            copy(*zs[i], *bz[i]);
            axpby(-1, *u[i], 1, *bz[i]);
            scale(sqrttau, *bz[i]);
        }
        comm::Agreement a(c, "ADMML2 x-step");
        cgls(a, *reg, ys, xs, o.inner_niter, 0, o.inner_tol, inner, Monitor{});
    };
    const auto zstep = [&] {  // Ax = A x; z = prox_{tau g}(Ax + u)
        apply(*A, out_ax, "ADMML2 A x");
        for (size_t i = 0; i < zs.size(); ++i) {
            copy(*ax[i], *w[i]);
            axpby(1, *u[i], 1, *w[i]);
        }
        comm::Agreement a(c, "ADMML2 z-step");
        if (z.stack) g.apply_stacked(a, *ws, o.tau, *z.stack);
        else g.apply(a, *w[0], o.tau, *z.array);
    };
    int64_t it = 0;
    Stop why = Stop::none;
    while (it < o.niter && why == Stop::none) {
        if (o.gfirst) {
            zstep();
            xstep();
        } else {
            xstep();
            zstep();
        }
        for (size_t i = 0; i < zs.size(); ++i) {
            axpby(1, *ax[i], 1, *u[i]);  // u + Ax
            axpby(-1, *zs[i], 1, *u[i]);  // - z
        }
        double pf = kNaN, pg = kNaN, J = kNaN;
        if (values) {  // 0.5 ||Op x - b||^2 and g(Ax)
            apply(*op, out_r, "ADMML2 Op x");
            axpby(-1, b, 1, *r);
            comm::Agreement a1(c, "ADMML2 f");
            const double n = r->norm(a1, 2.0);
            pf = 0.5 * (n * n);
            comm::Agreement a2(c, "ADMML2 g");
            pg = z.stack ? g.value_stacked(a2, *axs) : g.value(a2, *ax[0]);
            J = pf + pg;
            info.cost.push_back(J);
        }
        ++it;
        if (cb.stop(it, J)) why = Stop::callback;
        if (print && row(it - 1, o.niter))
            std::printf("%6lld  %12.5e  %10.3e  %10.3e  %10.3e\n", static_cast<long long>(it), first(x), pf, pg, J);
    }
    if (print) std::printf("\n---------------------------------------------------------\n");
    info.iterations = it;
    info.reason = why == Stop::none ? Stop::iterations : why;
    info.r1norm = info.cost.empty() ? kNaN : info.cost.back();
    info.r2norm = info.r1norm;
}

}  // namespace plm::solvers
