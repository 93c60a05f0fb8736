// ProximalGradient and ADMML2 (PyLops-MPI's proximal/optimization/primal.py), iterate for
// iterate. Every work vector, composite operator, planned step (solvers/prox_plan.hpp), the
// inner CGLS of ADMML2 and the history's room are made before the solve's agreement. An
// iteration then agrees only where it must: a reduction (J's values, one agreement for f and g;
// the inner CGLS's own), the callback's answer, and the steps that are not planned (user
// functions, the L2 prox with an operator), each with its own agreement on the solve's
// communicator.
#include <cmath>
#include <cstdio>
#include <string>

#include "kernels/kernels.hpp"
#include "solvers/proximal.hpp"
#include "solvers/prox_plan.hpp"
#include "solvers/proximal_util.hpp"

namespace plm::solvers {

using namespace prox_util;
using namespace local;

namespace {

const char *accel_name(int a)
{
    return a == PLM_ACCEL_VANDENBERGHE ? "vandenberghe" : a == PLM_ACCEL_FISTA ? "fista" : "None";
}

}  // namespace

// ProximalGradient per iteration, with f and g planned (L2 f, L1 / L0 / Box / closed-form L2
// g): the gradient (f's applies and the residual: 1 pass), w = base - tau grad (1 pass), the
// prox in place (L1, L0: 1 pass), then y = (1 + omega) x - omega x_old (2 passes, only when
// omega != 0): no agreement and no copy of x (the iterates rotate through x, x_old and a work
// array; x gets the last one at the end, or before each callback). J, when needed: f(x) and
// g(x) in one agreement. A callback's answer: one agreement. Unplanned steps (user functions,
// the L2 prox with an operator, L21, compositions) keep an agreement each. With backtracking,
// pyproximal's line search takes the step from y with the same planned or agreed gradient and
// prox; f's values and the test's reduction agree each try.
void proximal_gradient(comm::Agreement &ag, const Prox &f, const Prox &g, DistributedArray &x, const ProxGrad &o,
                       Info &info, const Monitor &mon)
{
    DistributedArray::Ptr y, xold, gr;
    DistributedArray::Ptr bgr, bw, bd;  // backtracking: grad f(y), the eta step's input, x - y
    std::optional<ProxPlan> fp, gp;
    std::optional<comm::Agreement> jstep;   // J = f + eps g: both values in one agreement
    std::vector<const DistributedArray *> xs;  // {the current iterate}, for the values
    ag.check([&] {
        PLM_REQUIRE(f.has_grad(), PLM_ERR_NOT_SUPPORTED, "ProximalGradient: proxf (%s) has no gradient", prox_name(f));
        PLM_REQUIRE(std::isfinite(o.tau) && o.tau > 0, PLM_ERR_INVALID_ARG,
                    "ProximalGradient: tau %g is not finite and > 0", o.tau);
        if (o.backtrack) {
            PLM_REQUIRE(o.beta > 0 && o.beta < 1, PLM_ERR_INVALID_ARG, "ProximalGradient: beta %g is not in (0, 1)",
                        o.beta);
            PLM_REQUIRE(o.niterback >= 1, PLM_ERR_INVALID_ARG, "ProximalGradient: niterback %lld is not >= 1",
                        static_cast<long long>(o.niterback));
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
        if (o.backtrack) {
            bgr = x.empty_like();
            bw = x.empty_like();
            bd = x.empty_like();
        }
        xs = {&x};
        fp.emplace(f, xs);
        gp.emplace(g, xs);
        jstep.emplace(x.base(), "ProximalGradient J");
        if (fp->value_planned()) fp->add_value(*jstep, xs);
        if (gp->value_planned()) gp->add_value(*jstep, xs);
        if (!jstep->ok()) throw *jstep->local_error();  // its root cause (an allocation: out of memory)
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
    fold_prox(ag, f);
    fold_prox(ag, g);
    if (fp && gp)  // the same path on every rank (a failed check is reported first)
        for (bool b : {fp->grad_planned(), fp->value_planned(), gp->prox_planned(), gp->value_planned()}) ag.fold(b);
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
    const auto grad = [&](const DistributedArray &at, DistributedArray &out) {
        if (fp->grad_planned()) return fp->grad(at, out);
        comm::Agreement a(c, "ProximalGradient grad");
        f.grad(a, at, out);
    };
    const auto prox = [&](DistributedArray &w, double tau) {  // in place
        if (gp->prox_planned()) return gp->prox(w, tau, w);
        comm::Agreement a(c, "ProximalGradient prox");
        g.apply(a, w, tau, w);
    };
    const auto value_f = [&](const DistributedArray &at) {
        comm::Agreement a(c, "ProximalGradient f");
        return f.value(a, at);
    };
    double tau = o.tau;  // backtracking changes it
    // pyproximal's line search from yb into xn: xn = prox_{eps tau g}(yb - tau grad f(yb)),
    // tau *= beta until f(xn) <= f(yb) + Re<grad f(yb), xn - yb> + ||xn - yb||^2 / (2 tau) or
    // niterback tries; tau is the last one tried times beta when none passed, as pyproximal
    // leaves it.
    const auto backtrack = [&](const DistributedArray &yb, double eps, DistributedArray &xn) {
        grad(yb, *bgr);
        const double fy = value_f(yb);
        for (int64_t ib = 0; ib < o.niterback; ++ib) {
            copy(yb, xn);
            axpby(-tau, *bgr, 1, xn);  // yb - tau grad f(yb)
            prox(xn, eps * tau);
            copy(xn, *bd);
            axpby(-1, yb, 1, *bd);  // xn - yb
            double re = 0, im = 0, nd = 0;
            {
                comm::Agreement a(c, "ProximalGradient backtracking");
                const size_t dl = bd->add_dot(a, bgr.get(), true);
                const DistributedArray::NormLanes nl = bd->add_norm(a, 2.0);
                a.run();
                bd->read_dot(a, dl, &re, &im);
                nd = bd->read_norm(a, nl);
            }
            if (value_f(xn) <= fy + re + (1.0 / (2.0 * tau)) * (nd * nd)) break;
            tau *= o.beta;
        }
    };
    // The iterate and the one before it; spare: free for the next w. base: y, the point the
    // gradient is taken at (eta 1): the iterate itself while omega is 0.
    DistributedArray *cur = &x, *old = xold.get(), *spare = gr.get();
    const DistributedArray *base = cur;
    double t = 1, pfg = std::numeric_limits<double>::infinity();
    int64_t it = 0;
    Stop why = Stop::none;
    while (it < o.niter && why == Stop::none) {
        const double eps = o.epsg.size() == 1 ? o.epsg[0] : o.epsg[static_cast<size_t>(it)];
        if (o.backtrack) {
            backtrack(*base, eps, *spare);  // from y
            if (o.eta != 1.0) {  // x + eta (prox_{eps tau g}(x - tau grad f(x)) - x), x the step's
                grad(*spare, *bgr);
                copy(*spare, *bw);
                axpby(-tau, *bgr, 1, *bw);
                prox(*bw, eps * tau);
                axpby(o.eta, *bw, 1 - o.eta, *spare);
            }
        } else {
            const DistributedArray &at = o.eta == 1.0 ? *base : *cur;
            grad(at, *spare);
            axpby(1, at, -tau, *spare);  // w = at - tau grad f(at)
            prox(*spare, eps * tau);
            if (o.eta != 1.0) axpby(1 - o.eta, *cur, o.eta, *spare);  // x + eta (prox - x)
        }
        DistributedArray *prev = cur;
        cur = spare;
        spare = old;
        old = prev;
        double omega = 0;
        if (o.accel == PLM_ACCEL_VANDENBERGHE) {
            omega = static_cast<double>(it) / static_cast<double>(it + 3);
        } else if (o.accel == PLM_ACCEL_FISTA) {
            const double told = t;
            t = (1.0 + std::sqrt(1.0 + 4.0 * t * t)) / 2.0;
            omega = (told - 1.0) / t;
        }
        // y = x + omega (x - x_old); with eta != 1 (and no backtracking, which starts from y)
        // the gradient is taken at x and y is unused.
        base = cur;
        if ((o.eta == 1.0 || o.backtrack) && omega != 0) {
            copy(*cur, *y);
            axpby(-omega, *old, 1 + omega, *y);
            base = y.get();
        }
        double pf = kNaN, pg = kNaN, J = kNaN;
        if (values) {
            xs[0] = cur;
            if (fp->value_planned() || gp->value_planned()) {
                jstep->rearm();
                if (fp->value_planned()) fp->set_value(*jstep, xs);
                if (gp->value_planned()) gp->set_value(*jstep, xs);
                jstep->run();
            }
            if (fp->value_planned()) {
                pf = fp->read_value(*jstep, xs);
            } else {
                comm::Agreement a1(c, "ProximalGradient f");
                pf = f.value(a1, *cur);
            }
            if (gp->value_planned()) {
                pg = gp->read_value(*jstep, xs);
            } else {
                comm::Agreement a2(c, "ProximalGradient g");
                pg = g.value(a2, *cur);
            }
            J = pf + eps * pg;
            info.cost.push_back(J);
        }
        ++it;
        if (cb.any() && cur != &x) {  // the callback sees x: move the iterate there
            copy(*cur, x);
            (spare == &x ? spare : old) = cur;
            if (base == cur) base = &x;
            cur = &x;
        }
        if (cb.stop(it, J)) why = Stop::callback;
        if (o.tol > 0) {
            const double was = pfg;
            pfg = J;
            if (std::abs(1.0 - pfg / was) < o.tol && why == Stop::none) why = Stop::tolerance;
        }
        if (print && row(it - 1, o.niter))
            std::printf("%6lld  %12.5e  %10.3e  %10.3e  %10.3e  %10.3e\n", static_cast<long long>(it), first(*cur), pf,
                        pg, J, tau);
    }
    if (cur != &x) copy(*cur, x);
    if (print) std::printf("\n---------------------------------------------------------\n");
    if (o.tau_out) *o.tau_out = tau;
    info.iterations = it;
    info.reason = why == Stop::none ? Stop::iterations : why;
    info.r1norm = info.cost.empty() ? kNaN : info.cost.back();
    info.r2norm = info.r1norm;
}

// ADMML2 per iteration, with g planned (L1, L0, Box; the others, L21 and compositions among
// them, take an agreed prox and value) and A, Op in one memory space: the x-step
// bz = (z - u) / sqrt(tau) (2 passes) and the planned inner CGLS (its own reductions: one, then
// two per inner iteration; no agreement of its own), the z-step A x (an apply), w = A x + u
// (2 passes) and the prox (L1, L0: 2 passes), then u = w - z (1 pass): no agreement besides the
// CGLS reductions. J, when some rank shows or has a callback: Op x (an apply), the residual (1
// pass), f and g in one agreement; a callback's answer: one agreement.
void admml2(comm::Agreement &ag, const Prox &g, const ops::Operator::Ptr &op, const DistributedArray &b,
            const ops::Operator::Ptr &A, DistributedArray &x, const AdmmZ &z, const Admm &o, Info &info,
            const Monitor &mon)
{
    // z's members and, per member, u, A x, the prox's input w and the x-step's data bz.
    Parts zs;
    std::vector<DistributedArray::Ptr> u, ax, w, bz;
    StackedArray::Ptr ws, axs;  // a stacked z: w and A x as the stacks the prox takes
    std::vector<const DistributedArray *> wl, axl;  // w and A x as lists (the planned prox and value)
    DistributedArray::Ptr r;
    ops::Operator::Ptr reg;
    Info inner;
    // Operand lists of the applies and the x-step, made before the agreement.
    ops::Operator::In in_x;
    ops::Operator::Out out_ax, out_r;
    Parts ys, xs;
    std::optional<ProxPlan> gp;
    Applier a_z0, a_ax, a_r;  // z0 = A x0, A x, Op x
    std::optional<comm::Agreement> jstep;
    DistributedArray::NormLanes rn{};
    ag.check([&] {
        require_plain_distributed(op, "ADMML2: Op");
        PLM_REQUIRE(A && !A->is_local(), PLM_ERR_INVALID_ARG, "ADMML2: A must be a distributed operator");
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
        // [Op; A / sqrt(tau)]: a stacked A's members follow Op's (stacks of stacks flatten)
        const Scalar s = make_scalar(A->dtype(), 1.0 / std::sqrt(o.tau), 0, "ADMML2");
        reg = ops::stacked_vstack({op, ops::scaled(A, s)});
        ys = {const_cast<DistributedArray *>(&b)};
        for (const DistributedArray *m : zs) {
            u.push_back(m->empty_like());
            ax.push_back(m->empty_like());
            w.push_back(m->empty_like());
            bz.push_back(m->empty_like());
            out_ax.push_back(ax.back().get());
            ys.push_back(bz.back().get());
            wl.push_back(w.back().get());
            axl.push_back(ax.back().get());
        }
        if (z.stack) {
            ws = StackedArray::create(w);
            axs = StackedArray::create(ax);
        }
        r = b.empty_like();
        in_x = {&x};
        out_r = {r.get()};
        xs = {&x};
        gp.emplace(g, wl);
        a_z0 = Applier(*A, in_x, zs, false);
        a_ax = Applier(*A, in_x, out_ax, false);
        a_r = Applier(*op, in_x, out_r, false);
        // J's reduction point: ||Op x - b||^2 and g(A x).
        jstep.emplace(x.base(), "ADMML2 J");
        rn = r->add_norm(*jstep, 2.0);
        if (gp->value_planned()) gp->add_value(*jstep, axl);
        if (!jstep->ok()) throw *jstep->local_error();  // its root cause (an allocation: out of memory)
        info = Info{};
        info.cost.reserve(static_cast<size_t>(o.niter));
    });
    std::optional<Cgls> xsolve;  // the x-step's CGLS, planned into this agreement
    if (ag.ok()) xsolve.emplace(ag, *reg, ys, xs, o.inner_niter, 0, o.inner_tol, inner);
    x.fold_layout(ag);
    ag.fold(z.stack != nullptr);
    ag.fold(static_cast<int64_t>(zs.size()));
    for (const DistributedArray *m : zs) m->fold_layout(ag);
    for (double v : {o.tau, o.inner_tol}) ag.fold_double(v);
    ag.fold(o.niter);
    ag.fold(o.inner_niter);
    ag.fold(o.gfirst);
    ag.fold(o.use_z0);
    fold_prox(ag, g);
    if (gp)  // the same path on every rank (a failed check is reported first)
        for (bool p : {gp->prox_planned(), gp->value_planned(), a_z0.ready(), a_ax.ready(), a_r.ready()}) ag.fold(p);
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
    const auto apply = [&](const Applier &planned, const ops::Operator &opr, const ops::Operator::Out &out,
                           const char *what) {
        if (planned.ready()) return planned.run();
        comm::Agreement a(c, what);
        ops::apply(a, opr, in_x, out, false);
    };
    if (!o.use_z0) apply(a_z0, *A, zs, "ADMML2 z0 = A x0");
    for (const DistributedArray::Ptr &m : u) m->fill(make_scalar(m->dtype(), 0, 0, "ADMML2"));
    const double sqrttau = 1.0 / std::sqrt(o.tau);
    const auto xstep = [&] {  // CGLS on [Op; A / sqrt(tau)] x = [b; (z - u) / sqrt(tau)], from x
        for (size_t i = 0; i < zs.size(); ++i) {
            copy(*zs[i], *bz[i]);
            axpby(-sqrttau, *u[i], sqrttau, *bz[i]);
        }
        xsolve->run(nullptr);
    };
    const auto zstep = [&] {  // Ax = A x; z = prox_{tau g}(Ax + u)
        apply(a_ax, *A, out_ax, "ADMML2 A x");
        for (size_t i = 0; i < zs.size(); ++i) {
            copy(*ax[i], *w[i]);
            axpby(1, *u[i], 1, *w[i]);
        }
        if (gp->prox_planned()) return gp->prox(wl, o.tau, zs);
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
        for (size_t i = 0; i < zs.size(); ++i) u[i]->binary(kernels::Binary::sub, *w[i], *zs[i]);  // u + Ax - z
        double pf = kNaN, pg = kNaN, J = kNaN;
        if (values) {  // 0.5 ||Op x - b||^2 and g(Ax)
            apply(a_r, *op, out_r, "ADMML2 Op x");
            axpby(-1, b, 1, *r);
            jstep->rearm();
            r->set_norm(*jstep, rn);
            if (gp->value_planned()) gp->set_value(*jstep, axl);
            jstep->run();
            const double n = r->read_norm(*jstep, rn);
            pf = 0.5 * (n * n);
            if (gp->value_planned()) {
                pg = gp->read_value(*jstep, axl);
            } else {
                comm::Agreement a2(c, "ADMML2 g");
                pg = z.stack ? g.value_stacked(a2, *axs) : g.value(a2, *ax[0]);
            }
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
