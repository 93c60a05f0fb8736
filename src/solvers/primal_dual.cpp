// PrimalDual and AdaptivePrimalDual (pyproximal's optimization/primaldual.py, PyLops-MPI's
// proximal/optimization/primaldual.py), iterate for iterate. As in proximal_solvers.cpp, every
// work vector and the history's room are made before the solve's agreement; each iteration
// is a sequence of agreed collective steps (operator applies, proximal steps, norms, the
// callback's answer), each with its own agreement on the solve's communicator. The dual
// variable y lives on A's range: one array for a plain A, a stack's members for a stacked A.
#include <cmath>
#include <cstdio>

#include "solvers/proximal.hpp"
#include "solvers/proximal_util.hpp"

namespace plm::solvers {

using namespace prox_util;
using namespace local;

namespace {

// A new array on layout l with x's dtype and memory space (not collective; in a check).
DistributedArray::Ptr new_like(const ArrayLayout::Ptr &l, const DistributedArray &x)
{
    return DistributedArray::create_from_layout(l, to_public(x.dtype()),
                                                x.space() == Space::device ? PLM_MEMORY_DEVICE : PLM_MEMORY_HOST,
                                                nullptr, 0);
}

// Arrays like each member of a list, and their pointer list.
struct Members {
    std::vector<DistributedArray::Ptr> own;
    Parts p;
    void like(const Parts &of)
    {
        for (const DistributedArray *m : of) own.push_back(m->empty_like());
        for (const DistributedArray::Ptr &m : own) p.push_back(m.get());
    }
    void on(const std::vector<ArrayLayout::Ptr> &layouts, const DistributedArray &x)
    {
        for (const ArrayLayout::Ptr &l : layouts) own.push_back(new_like(l, x));
        for (const DistributedArray::Ptr &m : own) p.push_back(m.get());
    }
    In in() const { return In(p.data(), p.size()); }
    Out out() const { return Out(p.data(), p.size()); }
};

void copy_all(const Parts &x, const Parts &y)
{
    for (size_t i = 0; i < x.size(); ++i) copy(*x[i], *y[i]);
}

void axpby_all(double a, const Parts &x, double b, const Parts &y)
{
    for (size_t i = 0; i < x.size(); ++i) axpby(a, *x[i], b, *y[i]);
}

ops::Operator::In const_parts(const Parts &p) { return ops::Operator::In(p.begin(), p.end()); }

double step(const std::vector<double> &v, int64_t it) { return v.size() == 1 ? v[0] : v[static_cast<size_t>(it)]; }

void require_steps(const std::vector<double> &v, int64_t niter, const char *what)
{
    PLM_REQUIRE(v.size() == 1 || static_cast<int64_t>(v.size()) == niter, PLM_ERR_SIZE_MISMATCH,
                "PrimalDual: %s has %zu values: 1 or niter (%lld) are needed", what, v.size(),
                static_cast<long long>(niter));
    for (double t : v)
        PLM_REQUIRE(std::isfinite(t) && t > 0, PLM_ERR_INVALID_ARG, "PrimalDual: %s %g is not finite and > 0", what, t);
}

// f(x) with a Box's value counted 0, as pyproximal's tables print a bool.
double table_value(const Prox &p, const comm::Communicator &c, const In &xs, const char *what)
{
    comm::Agreement a(c, what);
    const double v = p.value(a, xs);
    return p.kind == Prox::Kind::box ? 0.0 : v;
}

// The solve's table: f(x), g(A x) and z^T x, J their sum (A x into ax).
struct Costs {
    double pf = kNaN, pg = kNaN, zx = 0, J = kNaN;
};
Costs costs(const Prox &f, const Prox &g, const ops::Operator &A, const DistributedArray &x,
            const ops::Operator::In &x_in, const Members &ax, const DistributedArray *z)
{
    const comm::Communicator &c = x.base();
    Costs k;
    k.pf = table_value(f, c, In(x), "PrimalDual f");
    {
        comm::Agreement a(c, "PrimalDual A x");
        ops::apply(a, A, x_in, ax.p, false);
    }
    k.pg = table_value(g, c, ax.in(), "PrimalDual g");
    if (z) {
        comm::Agreement a(c, "PrimalDual z^T x");
        const size_t l = x.add_dot(a, z, false);
        a.run();
        double im = 0;
        x.read_dot(a, l, &k.zx, &im);
    }
    k.J = k.pf + k.pg + k.zx;
    return k;
}

void print_header(const char *title, const Prox &f, const Prox &g, const DistributedArray *z)
{
    std::printf("%s: min_x f(Ax) + x^T z + g(x) (pylopsmpi)\n"
                "---------------------------------------------------------\n"
                "Proximal operator (f): %s\nProximal operator (g): %s\nAdditional vector (z): %s\n",
                title, prox_name(f), prox_name(g), z ? "vector" : "None");
}

void print_row(int64_t it, const DistributedArray &x, const Costs &k)
{
    std::printf("%6lld  %12.5e  %10.3e  %10.3e  %10.3e      %10.3e\n", static_cast<long long>(it), first(x), k.pf, k.pg,
                k.zx, k.J);
}

// The checks both solvers share: A distributed (plain, or stacked with a stacked y), x and the
// members of y unmasked on A's domain and range parts, z on x's layout.
void check_common(const ops::Operator::Ptr &A, const DistributedArray &x, const Parts &ys, bool stacked_y,
                  const Prox &g, const DistributedArray *z, const char *what)
{
    PLM_REQUIRE(A, PLM_ERR_INVALID_ARG, "%s: A is NULL", what);
    PLM_REQUIRE(!A->is_local(), PLM_ERR_INVALID_ARG, "%s: A must be a distributed operator", what);
    if (!stacked_y) require_plain_distributed(A, what);
    PLM_REQUIRE(!stacked_y || !g.single_only(), PLM_ERR_NOT_SUPPORTED,
                "%s: a stacked y takes a g that takes stacks (not L2, nor one holding an array)", what);
    PLM_REQUIRE(!x.has_mask(), PLM_ERR_NOT_SUPPORTED, "%s: masked arrays are not supported", what);
    for (const DistributedArray *m : ys)
        PLM_REQUIRE(!m->has_mask(), PLM_ERR_NOT_SUPPORTED, "%s: masked arrays are not supported", what);
    A->check_parts({&x}, ys, false);
    if (z) z->require_compatible(x, "PrimalDual: z and x");
}

}  // namespace

void primal_dual(comm::Agreement &ag, const Prox &f, const Prox &g, const ops::Operator::Ptr &A,
                 DistributedArray &x, const AdmmZ &yz, const DistributedArray *z, const PrimalDualOpts &o, Info &info,
                 const Monitor &mon)
{
    Parts ys;
    Members ax, w;
    DistributedArray::Ptr xold, xhat, aty, xw;
    ops::Operator::In y_in, xhat_in, x_in;  // the applies' operand lists, made in the check
    ops::Operator::Out aty_out;
    ag.check([&] {
        PLM_REQUIRE(o.niter >= 0, PLM_ERR_INVALID_ARG, "PrimalDual: niter %lld is negative",
                    static_cast<long long>(o.niter));
        PLM_REQUIRE(std::isfinite(o.theta), PLM_ERR_INVALID_ARG, "PrimalDual: theta %g is not finite", o.theta);
        require_steps(o.tau, o.niter, "tau");
        require_steps(o.mu, o.niter, "mu");
        if (yz.stack)
            for (const DistributedArray::Ptr &m : yz.stack->members()) ys.push_back(m.get());
        else
            ys = {yz.array};
        check_common(A, x, ys, yz.stack != nullptr, g, z, "PrimalDual");
        ax.like(ys);
        w.like(ys);
        xold = x.empty_like();
        xhat = x.empty_like();
        aty = x.empty_like();
        xw = x.empty_like();
        y_in = const_parts(ys);
        xhat_in = {xhat.get()};
        x_in = {&x};
        aty_out = {aty.get()};
        info = Info{};
        info.cost.reserve(static_cast<size_t>(o.niter));
    });
    x.fold_layout(ag);
    ag.fold(yz.stack != nullptr);
    ag.fold(static_cast<int64_t>(ys.size()));
    for (const DistributedArray *m : ys) m->fold_layout(ag);
    ag.fold(z != nullptr);
    for (const std::vector<double> *v : {&o.tau, &o.mu}) {
        ag.fold(static_cast<int64_t>(v->size()));
        for (double t : *v) ag.fold_double(t);
    }
    ag.fold_double(o.theta);
    ag.fold(o.niter);
    ag.fold(o.gfirst);
    ag.fold(o.use_y0);
    Callback cb(mon, x.base(), "PrimalDual callback");
    cb.add(ag);
    ag.run();
    cb.read(ag);
    const comm::Communicator &c = x.base();
    const bool values = cb.any_show();
    const bool print = mon.show && c.rank() == 0;
    if (print) {
        print_header("Primal-dual", f, g, z);
        char t[32] = "Variable", m[32] = "Variable";  // no allocation after the agreement
        if (o.tau.size() == 1) std::snprintf(t, sizeof t, "%g", o.tau[0]);
        if (o.mu.size() == 1) std::snprintf(m, sizeof m, "%g", o.mu[0]);
        std::printf("tau = %s\t\tmu = %s\ntheta = %.2f\t\tniter = %lld\n\n", t, m, o.theta,
                    static_cast<long long>(o.niter));
        std::printf("   Itn       x[0]          f           g          z^x       J = f + g + z^x\n");
    }
    if (!o.use_y0)
        for (DistributedArray *m : ys) m->fill(make_scalar(m->dtype(), 0, 0, "PrimalDual"));
    copy(x, *xhat);
    const auto ystep = [&](double mu) {  // y = prox_{mu g*}(y + mu A xhat)
        {
            comm::Agreement a(c, "PrimalDual A xhat");
            ops::apply(a, *A, xhat_in, ax.p, false);
        }
        copy_all(ys, w.p);
        axpby_all(mu, ax.p, 1, w.p);
        comm::Agreement a(c, "PrimalDual dual step");
        g.dual(a, w.in(), mu, Out(ys.data(), ys.size()));
    };
    const auto xstep = [&](double tau) {  // x = prox_{tau f}(x - tau (A^H y + z)); xhat
        {
            comm::Agreement a(c, "PrimalDual A^H y");
            ops::apply(a, *A, y_in, aty_out, true);
        }
        if (z) axpby(1, *z, 1, *aty);
        copy(x, *xw);
        axpby(-tau, *aty, 1, *xw);
        {
            comm::Agreement a(c, "PrimalDual primal step");
            f.apply(a, In(*xw), tau, Out(x));
        }
        copy(x, *xhat);
        axpby(-1, *xold, 1, *xhat);        // x - xold
        axpby(1, x, o.theta, *xhat);       // x + theta (x - xold)
    };
    int64_t it = 0;
    Stop why = Stop::none;
    while (it < o.niter && why == Stop::none) {
        const double tau = step(o.tau, it), mu = step(o.mu, it);
        copy(x, *xold);
        if (o.gfirst) {
            ystep(mu);
            xstep(tau);
        } else {
            xstep(tau);
            ystep(mu);
        }
        Costs k;
        if (values) {
            k = costs(f, g, *A, x, x_in, ax, z);
            info.cost.push_back(k.J);
        }
        ++it;
        if (cb.stop(it, k.J)) why = Stop::callback;
        if (print && row(it - 1, o.niter)) print_row(it, x, k);
    }
    if (print) std::printf("\n---------------------------------------------------------\n");
    info.iterations = it;
    info.reason = why == Stop::none ? Stop::iterations : why;
    info.r1norm = info.cost.empty() ? kNaN : info.cost.back();
    info.r2norm = info.r1norm;
}

void adaptive_primal_dual(comm::Agreement &ag, const Prox &f, const Prox &g, const ops::Operator::Ptr &A,
                          DistributedArray &x, const DistributedArray *z, const AdaptiveOpts &o, Info &info,
                          const Monitor &mon)
{
    Members y, yold, ax, axold, w, ry;
    DistributedArray::Ptr xold, aty, atyold, xw, atz, r;
    std::vector<DistributedArray::NormLanes> dlanes;  // the dual residual's members
    ops::Operator::In x_in, y_in, z_in;  // the applies' operand lists, made in the check
    ops::Operator::Out aty_out, atz_out;
    ag.check([&] {
        PLM_REQUIRE(o.niter >= 0, PLM_ERR_INVALID_ARG, "AdaptivePrimalDual: niter %lld is negative",
                    static_cast<long long>(o.niter));
        for (double v : {o.tau, o.mu})
            PLM_REQUIRE(std::isfinite(v) && v > 0, PLM_ERR_INVALID_ARG,
                        "AdaptivePrimalDual: tau and mu must be finite and > 0 (%g)", v);
        PLM_REQUIRE(o.alpha > 0 && o.alpha < 1 && o.eta > 0 && o.eta < 1, PLM_ERR_INVALID_ARG,
                    "AdaptivePrimalDual: alpha %g and eta %g must be in (0, 1)", o.alpha, o.eta);
        PLM_REQUIRE(std::isfinite(o.s) && o.s > 0 && std::isfinite(o.delta) && o.delta > 0, PLM_ERR_INVALID_ARG,
                    "AdaptivePrimalDual: s %g and delta %g must be finite and > 0", o.s, o.delta);
        PLM_REQUIRE(!std::isnan(o.tol), PLM_ERR_INVALID_ARG, "AdaptivePrimalDual: tol is NaN");
        PLM_REQUIRE(A, PLM_ERR_INVALID_ARG, "AdaptivePrimalDual: A is NULL");
        PLM_REQUIRE(!A->is_local(), PLM_ERR_INVALID_ARG, "AdaptivePrimalDual: A must be a distributed operator");
        y.on(A->range_parts(), x);
        check_common(A, x, y.p, A->stacked(), g, z, "AdaptivePrimalDual");
        if (z) {  // pyproximal's primal residual has A^H z: z is on A's range too
            PLM_REQUIRE(!A->stacked(), PLM_ERR_NOT_SUPPORTED,
                        "AdaptivePrimalDual: z needs a plain A (its residual applies A^H to z)");
            atz = x.empty_like();
            A->check_parts({z}, {atz.get()}, true);
        }
        yold.like(y.p);
        ax.like(y.p);
        axold.like(y.p);
        w.like(y.p);
        ry.like(y.p);
        dlanes.resize(y.p.size());
        xold = x.empty_like();
        aty = x.empty_like();
        atyold = x.empty_like();
        xw = x.empty_like();
        r = x.empty_like();
        x_in = {&x};
        y_in = const_parts(y.p);
        aty_out = {aty.get()};
        if (z) {
            z_in = {z};
            atz_out = {atz.get()};
        }
        info = Info{};
        info.cost.reserve(static_cast<size_t>(o.niter));
    });
    x.fold_layout(ag);
    ag.fold(z != nullptr);
    for (double v : {o.tau, o.mu, o.alpha, o.eta, o.s, o.delta, o.tol}) ag.fold_double(v);
    ag.fold(o.niter);
    ag.fold(o.steps != nullptr);
    Callback cb(mon, x.base(), "AdaptivePrimalDual callback");
    cb.add(ag);
    ag.run();
    cb.read(ag);
    const comm::Communicator &c = x.base();
    const bool values = cb.any_show();
    const bool print = mon.show && c.rank() == 0;
    if (print) {
        print_header("Adaptive Primal-dual", f, g, z);
        std::printf("tau0 = %10e\tmu0 = %10e\nalpha0 = %10e\teta = %10e\ns = %10e\tdelta = %10e\n"
                    "niter = %lld\t\ttol = %10e\n\n",
                    o.tau, o.mu, o.alpha, o.eta, o.s, o.delta, static_cast<long long>(o.niter), o.tol);
        std::printf("   Itn       x[0]          f           g          z^x       J = f + g + z^x\n");
    }
    for (DistributedArray *m : y.p) m->fill(make_scalar(m->dtype(), 0, 0, "AdaptivePrimalDual"));
    for (DistributedArray *m : ax.p) m->fill(make_scalar(m->dtype(), 0, 0, "AdaptivePrimalDual"));
    aty->fill(make_scalar(aty->dtype(), 0, 0, "AdaptivePrimalDual"));
    if (z) {
        comm::Agreement a(c, "AdaptivePrimalDual A^H z");
        ops::apply(a, *A, z_in, atz_out, true);
    }
    double tau = o.tau, mu = o.mu, alpha = o.alpha;
    const auto record = [&](int64_t i) {
        if (!o.steps) return;
        const size_t n = static_cast<size_t>(o.niter + 1), k = static_cast<size_t>(i);
        o.steps[k] = tau;
        o.steps[n + k] = mu;
        o.steps[2 * n + k] = alpha;
    };
    record(0);
    double p = o.tol + 1.0, d = o.tol + 1.0;
    int64_t it = 0;
    Stop why = Stop::none;
    while (it < o.niter && p > o.tol && d > o.tol && why == Stop::none) {
        copy(x, *xold);
        copy_all(y.p, yold.p);
        copy_all(ax.p, axold.p);
        copy(*aty, *atyold);
        if (z) axpby(1, *z, 1, *aty);
        copy(x, *xw);
        axpby(-tau, *aty, 1, *xw);  // x - tau (A^H y + z)
        {
            comm::Agreement a(c, "AdaptivePrimalDual primal step");
            f.apply(a, In(*xw), tau, Out(x));
        }
        {
            comm::Agreement a(c, "AdaptivePrimalDual A x");
            ops::apply(a, *A, x_in, ax.p, false);
        }
        copy_all(ax.p, w.p);  // y + mu (2 A x - A xold)
        axpby_all(-1, axold.p, 2, w.p);
        axpby_all(1, y.p, mu, w.p);
        {
            comm::Agreement a(c, "AdaptivePrimalDual dual step");
            g.dual(a, w.in(), mu, y.out());
        }
        {
            comm::Agreement a(c, "AdaptivePrimalDual A^H y");
            ops::apply(a, *A, y_in, aty_out, true);
        }
        // the residuals: p = ||(xold - x) / tau - (ATyold - ATy) [- A^H z + z]||,
        // d = ||(yold - y) / mu - (Axold - Ax)||
        axpby(-1, *aty, 1, *atyold);  // ATyold - ATy
        copy(*xold, *r);
        axpby(-1, x, 1, *r);
        scale(1.0 / tau, *r);
        axpby(-1, *atyold, 1, *r);
        if (z) {
            axpby(-1, *atz, 1, *r);
            axpby(1, *z, 1, *r);
        }
        for (size_t i = 0; i < y.p.size(); ++i) {
            axpby(-1, *ax.p[i], 1, *axold.p[i]);  // Axold - Ax
            copy(*yold.p[i], *ry.p[i]);
            axpby(-1, *y.p[i], 1, *ry.p[i]);
            scale(1.0 / mu, *ry.p[i]);
            axpby(-1, *axold.p[i], 1, *ry.p[i]);
        }
        {
            comm::Agreement a(c, "AdaptivePrimalDual residuals");
            const DistributedArray::NormLanes pl = r->add_norm(a, 2.0);
            for (size_t i = 0; i < y.p.size(); ++i) dlanes[i] = ry.p[i]->add_norm(a, 2.0);
            a.run();
            p = r->read_norm(a, pl);
            double s2 = 0;
            for (size_t i = 0; i < y.p.size(); ++i) {
                const double v = ry.p[i]->read_norm(a, dlanes[i]);
                s2 += v * v;
            }
            d = std::sqrt(s2);
        }
        if (p > o.s * d * o.delta) {
            tau /= 1 - alpha;
            mu *= 1 - alpha;
            alpha *= o.eta;
        } else if (p < o.s * d / o.delta) {
            tau *= 1 - alpha;
            mu /= 1 - alpha;
            alpha *= o.eta;
        }
        ++it;
        record(it);
        Costs k;
        if (values) {
            k = costs(f, g, *A, x, x_in, w, z);  // w: free scratch on A's range here
            info.cost.push_back(k.J);
        }
        if (cb.stop(it, k.J)) why = Stop::callback;
        if (print && row(it - 1, o.niter)) print_row(it, x, k);
    }
    if (print) std::printf("\n---------------------------------------------------------\n");
    info.iterations = it;
    info.reason = why != Stop::none ? why : (p <= o.tol || d <= o.tol) ? Stop::tolerance : Stop::iterations;
    info.r1norm = p;
    info.r2norm = d;
}

}  // namespace plm::solvers
