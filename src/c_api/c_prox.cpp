// Proximal operators and solvers (pylopsmpi/prox.h): handle <-> object and the firewall; the work
// is in solvers/proximal.cpp and solvers/proximal_solvers.cpp.
#include <cmath>
#include <memory>

#include "c_api/op_api.hpp"

using namespace plm;
using plm::detail::array_of;
using plm::detail::guard;
using plm::detail::info_of;
using plm::detail::monitor_of;
using plm::detail::op_of;

namespace {

constexpr uint32_t kProxMagic = 0x504c4d50u;

// Wraps a new proximal operator in a handle.
template <typename F> plm_status_t make(plm_prox_t *out, F &&fill)
{
    return guard([&] {
        detail::clear_out(out, "out");
        std::unique_ptr<plm_prox_s> h(new plm_prox_s());
        fill(h->prox);
        h->magic = kProxMagic;
        *out = h.release();
    });
}

plm_status_t make_threshold(solvers::Prox::Kind kind, double sigma, plm_prox_t *out)
{
    return make(out, [&](solvers::Prox &p) {
        PLM_REQUIRE(std::isfinite(sigma) && sigma >= 0, PLM_ERR_INVALID_ARG, "sigma %g is not finite and >= 0", sigma);
        p.kind = kind;
        p.sigma = sigma;
    });
}

// An array argument of plm_prox_create_l2: on layout l (when given) with dtype dt, copied.
DistributedArray::Ptr l2_copy(plm_const_array_t a, const ArrayLayout::Ptr &l, DType dt, const char *what)
{
    if (!a) return nullptr;
    const DistributedArray &x = array_of(a);
    if (l) l->require_same(*x.layout_object(), what);
    PLM_REQUIRE(x.dtype() == dt, PLM_ERR_DTYPE_MISMATCH, "%s: dtype %s, the operator's is %s", what,
                dtype_name(x.dtype()), dtype_name(dt));
    return x.duplicate();
}

}  // namespace

const solvers::Prox &detail::prox_of(const plm_prox_s *h)
{
    PLM_REQUIRE(h && h->magic == kProxMagic, PLM_ERR_INVALID_ARG, "plm_prox_t is not a valid proximal operator");
    return h->prox;
}

PLM_API plm_status_t plm_prox_create_l1(double sigma, plm_prox_t *out)
{
    return make_threshold(solvers::Prox::Kind::l1, sigma, out);
}

PLM_API plm_status_t plm_prox_create_l0(double sigma, plm_prox_t *out)
{
    return make_threshold(solvers::Prox::Kind::l0, sigma, out);
}

PLM_API plm_status_t plm_prox_create_l0_threshold(double sigma, plm_l0_threshold_t rule, plm_prox_t *out)
{
    return make(out, [&](solvers::Prox &p) {
        PLM_REQUIRE(std::isfinite(sigma) && sigma >= 0, PLM_ERR_INVALID_ARG, "sigma %g is not finite and >= 0", sigma);
        const int r = enum_value(rule);
        PLM_REQUIRE(r == PLM_L0_EXACT || r == PLM_L0_PYPROXIMAL, PLM_ERR_INVALID_ARG, "unknown L0 threshold rule %d", r);
        p.kind = solvers::Prox::Kind::l0;
        p.sigma = sigma;
        p.l0_at = r == PLM_L0_PYPROXIMAL;
    });
}

PLM_API plm_status_t plm_prox_create_l21(int64_t ndim, double sigma, plm_prox_t *out)
{
    return make(out, [&](solvers::Prox &p) {
        PLM_REQUIRE(std::isfinite(sigma) && sigma >= 0, PLM_ERR_INVALID_ARG, "sigma %g is not finite and >= 0", sigma);
        PLM_REQUIRE(ndim >= 1, PLM_ERR_INVALID_ARG, "L21: ndim %lld is not >= 1", static_cast<long long>(ndim));
        p.kind = solvers::Prox::Kind::l21;
        p.sigma = sigma;
        p.ndim = ndim;
    });
}

PLM_API plm_status_t plm_prox_postcomposition(plm_const_prox_t f, double sigma, plm_prox_t *out)
{
    return make(out, [&](solvers::Prox &p) {
        const solvers::Prox &inner = detail::prox_of(f);
        PLM_REQUIRE(std::isfinite(sigma) && sigma > 0, PLM_ERR_INVALID_ARG,
                    "postcomposition: sigma %g is not finite and > 0", sigma);
        p.kind = solvers::Prox::Kind::post;
        p.sigma = sigma;
        p.f = std::make_shared<const solvers::Prox>(inner);
    });
}

PLM_API plm_status_t plm_prox_precomposition(plm_const_prox_t f, double a, double b_value, plm_const_array_t b_array,
                                             plm_prox_t *out)
{
    return make(out, [&](solvers::Prox &p) {
        const solvers::Prox &inner = detail::prox_of(f);
        PLM_REQUIRE(std::isfinite(a) && a != 0 && std::isfinite(b_value), PLM_ERR_INVALID_ARG,
                    "precomposition: a %g must be finite and non-zero, b %g finite", a, b_value);
        p.kind = solvers::Prox::Kind::pre;
        p.a = a;
        p.b = b_array ? 0.0 : b_value;
        if (b_array) p.vec = array_of(b_array).duplicate();
        p.f = std::make_shared<const solvers::Prox>(inner);
    });
}

PLM_API plm_status_t plm_prox_affine_addition(plm_const_prox_t f, plm_const_array_t v, plm_prox_t *out)
{
    return make(out, [&](solvers::Prox &p) {
        const solvers::Prox &inner = detail::prox_of(f);
        p.kind = solvers::Prox::Kind::affine;
        p.vec = array_of(v).duplicate();
        p.f = std::make_shared<const solvers::Prox>(inner);
    });
}

PLM_API plm_status_t plm_prox_chain(plm_const_prox_t f, plm_const_prox_t g, plm_prox_t *out)
{
    return make(out, [&](solvers::Prox &p) {
        const solvers::Prox &pf = detail::prox_of(f), &pg = detail::prox_of(g);
        p.kind = solvers::Prox::Kind::chain;
        p.f = std::make_shared<const solvers::Prox>(pf);
        p.g = std::make_shared<const solvers::Prox>(pg);
    });
}

PLM_API plm_status_t plm_prox_create_box(double lower, double upper, plm_prox_t *out)
{
    return make(out, [&](solvers::Prox &p) {
        PLM_REQUIRE(!std::isnan(lower) && !std::isnan(upper), PLM_ERR_INVALID_ARG, "Box bounds %g, %g: NaN", lower,
                    upper);
        p.kind = solvers::Prox::Kind::box;
        p.lower = lower;
        p.upper = upper;
    });
}

PLM_API plm_status_t plm_prox_create_l2(plm_const_op_t op, plm_const_array_t b, plm_const_array_t q, double sigma,
                                        double alpha, int qgrad, int64_t niter, double tol, plm_const_array_t x0,
                                        int warm, plm_l2_solver_t solver, plm_prox_t *out)
{
    return make(out, [&](solvers::Prox &p) {
        PLM_REQUIRE(std::isfinite(sigma) && std::isfinite(alpha), PLM_ERR_INVALID_ARG, "sigma %g or alpha %g is not finite",
                    sigma, alpha);
        PLM_REQUIRE(niter >= 0 && tol >= 0, PLM_ERR_INVALID_ARG, "niter %lld or tol %g is negative",
                    static_cast<long long>(niter), tol);
        const int s = enum_value(solver);
        PLM_REQUIRE(s == PLM_L2_CGLS || s == PLM_L2_CG, PLM_ERR_INVALID_ARG, "unknown L2 solver %d", s);
        solvers::L2 &l = p.l2;
        if (op) {
            l.op = detail::op_of(op);
            detail::plain_op(op);  // one array in, one array out (a plain operator, or S^H S ...)
            PLM_REQUIRE(b, PLM_ERR_INVALID_ARG, "L2 with an operator needs b (PyLops-MPI ignores the operator then)");
            PLM_REQUIRE(x0, PLM_ERR_INVALID_ARG, "L2 with an operator needs x0");
            const DType dt = l.op->dtype();
            l.b = l2_copy(b, l.op->range(), dt, "L2: b and the operator's range");
            l.q = l2_copy(q, l.op->domain(), dt, "L2: q and the operator's domain");
            l.x0 = l2_copy(x0, l.op->domain(), dt, "L2: x0 and the operator's domain");
            PLM_REQUIRE(l.b->space() == l.x0->space() && (!l.q || l.q->space() == l.x0->space()), PLM_ERR_INVALID_ARG,
                        "L2: b, q and x0 must be in one memory space");
        } else {
            PLM_REQUIRE(!x0, PLM_ERR_INVALID_ARG, "L2 without an operator takes no x0");
            if (b) l.b = array_of(b).duplicate();
            if (q) {
                const DistributedArray &qa = array_of(q);
                if (l.b) l.b->require_compatible(qa, "L2: b and q");
                l.q = qa.duplicate();
            }
        }
        p.kind = solvers::Prox::Kind::l2;
        p.sigma = sigma;
        l.alpha = alpha;
        l.qgrad = qgrad != 0;
        l.niter = niter;
        l.tol = tol;
        l.warm = warm != 0;
        l.cg = s == PLM_L2_CG;
    });
}

PLM_API plm_status_t plm_prox_create_callback(plm_prox_fn prox, plm_prox_value_fn value, plm_prox_grad_fn grad,
                                              void *ctx, void (*destroy)(void *ctx), plm_prox_t *out)
{
    return make(out, [&](solvers::Prox &p) {
        PLM_REQUIRE(prox, PLM_ERR_INVALID_ARG, "a user proximal operator needs its prox function");
        p.kind = solvers::Prox::Kind::user;
        p.user.prox = prox;
        p.user.value = value;
        p.user.grad = grad;
        // last: nothing fails after ctx has an owner (a failed call leaves ctx the caller's)
        auto owner = std::make_shared<solvers::UserCtx>();
        owner->ctx = ctx;
        owner->destroy = destroy;
        p.user.owner = std::move(owner);
    });
}

PLM_API plm_status_t plm_prox_apply(plm_const_prox_t prox, plm_const_array_t x, double tau, plm_array_t out)
{
    return guard([&] {
        const DistributedArray &a = array_of(x);
        comm::Agreement ag(a.base(), "prox_apply");
        const solvers::Prox *p = nullptr;
        DistributedArray *o = nullptr;
        ag.check([&] {
            p = &detail::prox_of(prox);
            o = &array_of(out);
        });
        // A failed check leaves p or o unset: apply() still joins the agreement (with placeholders;
        // its run() throws before anything is written).
        static const solvers::Prox none;
        (p ? *p : none).apply(ag, a, tau, o ? *o : const_cast<DistributedArray &>(a));
    });
}

PLM_API plm_status_t plm_prox_value(plm_const_prox_t prox, plm_const_array_t x, double *value)
{
    return guard([&] {
        const DistributedArray &a = array_of(x);
        comm::Agreement ag(a.base(), "prox_value");
        const solvers::Prox *p = nullptr;
        ag.check([&] {
            p = &detail::prox_of(prox);
            PLM_REQUIRE(value, PLM_ERR_INVALID_ARG, "prox_value: value is NULL");
        });
        static const solvers::Prox none;
        const double v = (p ? *p : none).value(ag, a);
        *value = v;
    });
}

PLM_API plm_status_t plm_prox_apply_stacked(plm_const_prox_t prox, plm_const_stacked_t x, double tau,
                                            plm_stacked_t out)
{
    return guard([&] {
        const StackedArray &s = detail::stack_of(x);
        comm::Agreement ag(s.base(), "prox_apply_stacked");
        const solvers::Prox *p = nullptr;
        StackedArray *o = nullptr;
        ag.check([&] {
            p = &detail::prox_of(prox);
            o = &detail::stack_of(out);
        });
        static const solvers::Prox none;  // as in plm_prox_apply
        (p ? *p : none).apply_stacked(ag, s, tau, o ? *o : const_cast<StackedArray &>(s));
    });
}

PLM_API plm_status_t plm_prox_value_stacked(plm_const_prox_t prox, plm_const_stacked_t x, double *value)
{
    return guard([&] {
        const StackedArray &s = detail::stack_of(x);
        comm::Agreement ag(s.base(), "prox_value_stacked");
        const solvers::Prox *p = nullptr;
        ag.check([&] {
            p = &detail::prox_of(prox);
            PLM_REQUIRE(value, PLM_ERR_INVALID_ARG, "prox_value_stacked: value is NULL");
        });
        static const solvers::Prox none;
        const double v = (p ? *p : none).value_stacked(ag, s);
        *value = v;
    });
}

PLM_API plm_status_t plm_prox_grad(plm_const_prox_t prox, plm_const_array_t x, plm_array_t out)
{
    return guard([&] {
        const DistributedArray &a = array_of(x);
        comm::Agreement ag(a.base(), "prox_grad");
        const solvers::Prox *p = nullptr;
        DistributedArray *o = nullptr;
        ag.check([&] {
            p = &detail::prox_of(prox);
            o = &array_of(out);
        });
        static const solvers::Prox none;  // L1: no gradient, fails the check and joins
        (p ? *p : none).grad(ag, a, o ? *o : const_cast<DistributedArray &>(a));
    });
}

PLM_API plm_status_t plm_prox_destroy(plm_prox_t *prox)
{
    return guard([&] {
        if (!prox || !*prox) return;
        detail::prox_of(*prox);
        (*prox)->magic = 0;  // a user operator's ctx goes with its last holder (compositions hold it too)
        delete *prox;
        *prox = nullptr;
    });
}

namespace {

// The collective prox steps on an array or a stack: x, out and the prox resolved inside the
// agreement (a failed check leaves placeholders the step only joins with).
enum class Step { dual, gradient };

void run_step(comm::Agreement &ag, const solvers::Prox &p, Step step, const solvers::In &xs, double t,
              const solvers::Out &outs)
{
    if (step == Step::dual) p.dual(ag, xs, t, outs);
    else p.grad(ag, xs, outs, t);
}

void check_t(Step step, double t)
{
    PLM_REQUIRE(std::isfinite(t) && t > 0, PLM_ERR_INVALID_ARG, "prox %s: %s %g is not finite and > 0",
                step == Step::dual ? "dual" : "gradient", step == Step::dual ? "tau" : "sigmame", t);
}

plm_status_t array_step(Step step, plm_const_prox_t prox, plm_const_array_t x, double t, plm_array_t out,
                        const char *what)
{
    return guard([&] {
        const DistributedArray &a = array_of(x);
        comm::Agreement ag(a.base(), what);
        static const solvers::Prox none;
        const solvers::Prox *p = &none;
        DistributedArray *o = const_cast<DistributedArray *>(&a);  // a placeholder until checked
        ag.check([&] {
            p = &detail::prox_of(prox);
            o = &array_of(out);
            check_t(step, t);
            o->require_compatible(a, what);
            PLM_REQUIRE(step == Step::dual || o != &a, PLM_ERR_INVALID_ARG, "%s: out must not be x", what);
        });
        a.fold_layout(ag);
        run_step(ag, *p, step, solvers::In(a), t, solvers::Out(*o));
    });
}

plm_status_t stacked_step(Step step, plm_const_prox_t prox, plm_const_stacked_t x, double t, plm_stacked_t out,
                          const char *what)
{
    return guard([&] {
        const StackedArray &s = detail::stack_of(x);
        comm::Agreement ag(s.base(), what);
        static const solvers::Prox none;
        const solvers::Prox *p = &none;
        StackedArray *o = const_cast<StackedArray *>(&s);
        ag.check([&] {
            p = &detail::prox_of(prox);
            o = &detail::stack_of(out);
            check_t(step, t);
            PLM_REQUIRE(!p->single_only(), PLM_ERR_NOT_SUPPORTED,
                        "%s: this proximal operator takes single arrays, not stacks", what);
            o->require_compatible(s, what);
            for (size_t i = 0; i < s.members().size(); ++i)
                PLM_REQUIRE(step == Step::dual || o->members()[i] != s.members()[i], PLM_ERR_INVALID_ARG,
                            "%s: out must not be x", what);
        });
        ag.fold(static_cast<int64_t>(s.members().size()));
        for (const auto &m : s.members()) m->fold_layout(ag);
        run_step(ag, *p, step, solvers::In(s.members()), t, solvers::Out(o->members()));
    });
}

}  // namespace

PLM_API plm_status_t plm_prox_dual(plm_const_prox_t prox, plm_const_array_t x, double tau, plm_array_t out)
{
    return array_step(Step::dual, prox, x, tau, out, "prox_dual");
}

PLM_API plm_status_t plm_prox_dual_stacked(plm_const_prox_t prox, plm_const_stacked_t x, double tau,
                                           plm_stacked_t out)
{
    return stacked_step(Step::dual, prox, x, tau, out, "prox_dual_stacked");
}

PLM_API plm_status_t plm_prox_gradient(plm_const_prox_t prox, plm_const_array_t x, double sigmame, plm_array_t out)
{
    return array_step(Step::gradient, prox, x, sigmame, out, "prox_gradient");
}

PLM_API plm_status_t plm_prox_gradient_stacked(plm_const_prox_t prox, plm_const_stacked_t x, double sigmame,
                                               plm_stacked_t out)
{
    return stacked_step(Step::gradient, prox, x, sigmame, out, "prox_gradient_stacked");
}

// ---- proximal solvers (the work is in solvers/proximal_solvers.cpp and primal_dual.cpp) ----
namespace {

// What both ProximalGradient entry points do; extra sets the options only one of them has.
template <typename Extra>
plm_status_t proximal_gradient(const char *what, plm_const_prox_t proxf, plm_const_prox_t proxg, plm_array_t x,
                               double tau, const double *epsg, int64_t n_epsg, double eta, int64_t niter,
                               plm_accel_t acceleration, double tol, plm_solver_info_t info, Extra extra)
{
    return guard([&] {
        DistributedArray &xa = detail::array_of(x);
        comm::Agreement ag(xa.base(), what);
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
            extra(o);
            if (info) inf = &info_of(info);
            mon = monitor_of(info, x);
        });
        solvers::proximal_gradient(ag, *f, *g, xa, o, *inf, mon);
    });
}

}  // namespace

PLM_API plm_status_t plm_solve_proximal_gradient(plm_const_prox_t proxf, plm_const_prox_t proxg, plm_array_t x,
                                                 double tau, const double *epsg, int64_t n_epsg, double eta,
                                                 int64_t niter, plm_accel_t acceleration, double tol,
                                                 plm_solver_info_t info)
{
    return proximal_gradient("solve_proximal_gradient", proxf, proxg, x, tau, epsg, n_epsg, eta, niter, acceleration,
                             tol, info, [](solvers::ProxGrad &) {});
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

PLM_API plm_status_t plm_solve_proximal_gradient_backtracking(plm_const_prox_t proxf, plm_const_prox_t proxg,
                                                              plm_array_t x, double tau0, double beta,
                                                              int64_t niterback, const double *epsg, int64_t n_epsg,
                                                              double eta, int64_t niter, plm_accel_t acceleration,
                                                              double tol, double *tau, plm_solver_info_t info)
{
    return proximal_gradient("solve_proximal_gradient_backtracking", proxf, proxg, x, tau0, epsg, n_epsg, eta, niter,
                             acceleration, tol, info, [&](solvers::ProxGrad &o) {
                                 o.backtrack = true;
                                 o.beta = beta;
                                 o.niterback = niterback;
                                 o.tau_out = tau;
                             });
}

namespace {

// The arguments both PrimalDual entry points share, resolved inside the agreement.
void primal_dual_args(solvers::PrimalDualOpts &o, const double *tau, int64_t n_tau, const double *mu, int64_t n_mu,
                      double theta, int64_t niter, int gfirst, int use_y0)
{
    PLM_REQUIRE(tau && n_tau >= 1 && mu && n_mu >= 1, PLM_ERR_INVALID_ARG,
                "PrimalDual: tau and mu need 1 or niter values (n_tau = %lld, n_mu = %lld)",
                static_cast<long long>(n_tau), static_cast<long long>(n_mu));
    o.tau.assign(tau, tau + n_tau);
    o.mu.assign(mu, mu + n_mu);
    o.theta = theta;
    o.niter = niter;
    o.gfirst = gfirst != 0;
    o.use_y0 = use_y0 != 0;
}

plm_status_t primal_dual(plm_const_prox_t proxf, plm_const_prox_t proxg, plm_const_op_t A, plm_array_t x,
                         plm_array_t y, plm_stacked_t ys, int use_y0, const double *tau, int64_t n_tau,
                         const double *mu, int64_t n_mu, plm_const_array_t z, double theta, int64_t niter, int gfirst,
                         plm_solver_info_t info, const char *what)
{
    return guard([&] {
        DistributedArray &xa = detail::array_of(x);
        comm::Agreement ag(xa.base(), what);
        static const solvers::Prox none;
        const solvers::Prox *f = &none, *g = &none;
        ops::Operator::Ptr op;
        solvers::AdmmZ yz{&xa, nullptr};  // a placeholder until y is checked (run() throws first)
        const DistributedArray *za = nullptr;
        solvers::PrimalDualOpts o;
        solvers::Info local, *inf = &local;
        solvers::Monitor mon;
        ag.check([&] {
            f = &detail::prox_of(proxf);
            g = &detail::prox_of(proxg);
            op = op_of(A);
            yz = ys ? solvers::AdmmZ{nullptr, &detail::stack_of(ys)} : solvers::AdmmZ{&detail::array_of(y), nullptr};
            if (z) za = &detail::array_of(z);
            primal_dual_args(o, tau, n_tau, mu, n_mu, theta, niter, gfirst, use_y0);
            if (info) inf = &info_of(info);
            mon = monitor_of(info, x);
        });
        solvers::primal_dual(ag, *f, *g, op, xa, yz, za, o, *inf, mon);
    });
}

}  // namespace

PLM_API plm_status_t plm_solve_primal_dual(plm_const_prox_t proxf, plm_const_prox_t proxg, plm_const_op_t A,
                                           plm_array_t x, plm_array_t y, int use_y0, const double *tau,
                                           int64_t n_tau, const double *mu, int64_t n_mu, plm_const_array_t z,
                                           double theta, int64_t niter, int gfirst, plm_solver_info_t info)
{
    return primal_dual(proxf, proxg, A, x, y, nullptr, use_y0, tau, n_tau, mu, n_mu, z, theta, niter, gfirst, info,
                       "solve_primal_dual");
}

PLM_API plm_status_t plm_solve_primal_dual_stacked(plm_const_prox_t proxf, plm_const_prox_t proxg, plm_const_op_t A,
                                                   plm_array_t x, plm_stacked_t y, int use_y0, const double *tau,
                                                   int64_t n_tau, const double *mu, int64_t n_mu, plm_const_array_t z,
                                                   double theta, int64_t niter, int gfirst, plm_solver_info_t info)
{
    return primal_dual(proxf, proxg, A, x, nullptr, y, use_y0, tau, n_tau, mu, n_mu, z, theta, niter, gfirst, info,
                       "solve_primal_dual_stacked");
}

PLM_API plm_status_t plm_solve_adaptive_primal_dual(plm_const_prox_t proxf, plm_const_prox_t proxg, plm_const_op_t A,
                                                    plm_array_t x, plm_const_array_t z, double tau, double mu,
                                                    double alpha, double eta, double s, double delta, int64_t niter,
                                                    double tol, double *steps, int64_t n_steps,
                                                    plm_solver_info_t info)
{
    return guard([&] {
        DistributedArray &xa = detail::array_of(x);
        comm::Agreement ag(xa.base(), "solve_adaptive_primal_dual");
        static const solvers::Prox none;
        const solvers::Prox *f = &none, *g = &none;
        ops::Operator::Ptr op;
        const DistributedArray *za = nullptr;
        solvers::AdaptiveOpts o;
        solvers::Info local, *inf = &local;
        solvers::Monitor mon;
        ag.check([&] {
            f = &detail::prox_of(proxf);
            g = &detail::prox_of(proxg);
            op = op_of(A);
            if (z) za = &detail::array_of(z);
            PLM_REQUIRE(niter >= 0 && niter < INT64_MAX / 3, PLM_ERR_INVALID_ARG, "AdaptivePrimalDual: niter %lld",
                        static_cast<long long>(niter));
            PLM_REQUIRE(steps ? n_steps == 3 * (niter + 1) : n_steps == 0, PLM_ERR_SIZE_MISMATCH,
                        "AdaptivePrimalDual: steps needs 3 (niter + 1) = %lld values (n_steps = %lld), or NULL and 0",
                        static_cast<long long>(3 * (niter + 1)), static_cast<long long>(n_steps));
            o.tau = tau;
            o.mu = mu;
            o.alpha = alpha;
            o.eta = eta;
            o.s = s;
            o.delta = delta;
            o.niter = niter;
            o.tol = tol;
            o.steps = steps;
            if (info) inf = &info_of(info);
            mon = monitor_of(info, x);
        });
        solvers::adaptive_primal_dual(ag, *f, *g, op, xa, za, o, *inf, mon);
    });
}
