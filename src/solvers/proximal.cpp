#include "solvers/proximal.hpp"

#include <cmath>
#include <string>

#include "core/alloc.hpp"
#include "kernels/kernels.hpp"
#include "solvers/proximal_util.hpp"

namespace plm::solvers {

namespace prox_util {

// The array a failed check left unset: a placeholder the agreement may still read (its run()
// throws before anything is computed with it).
const DistributedArray &or_else(const DistributedArray::Ptr &p, const DistributedArray &fallback)
{
    return p ? *p : fallback;
}

}  // namespace prox_util

using namespace prox_util;
using namespace local;

namespace {

// MPIL2's I: the identity on one distributed layout (PyLops-MPI's MPIBlockDiag of local
// identities for SCATTER, the broadcast identity otherwise).
class Identity final : public ops::Operator {
public:
    Identity(DType dt, ArrayLayout::Ptr l) : Operator(dt, l, l) {}
    bool native(Space) const override { return true; }
    void apply(const DistributedArray &x, DistributedArray &y, bool, ops::Work *) const override { copy(x, y); }
};

const char *kind_name(Prox::Kind k)
{
    switch (k) {
    case Prox::Kind::l1: return "L1";
    case Prox::Kind::l0: return "L0";
    case Prox::Kind::box: return "Box";
    case Prox::Kind::l2: return "L2";
    case Prox::Kind::user: return "user";
    }
    return "?";
}

void require_user_host(const DistributedArray &x, bool have, const char *what)
{
    PLM_REQUIRE(have, PLM_ERR_NOT_SUPPORTED, "this user proximal operator has no %s function", what);
    PLM_REQUIRE(x.space() == Space::host, PLM_ERR_NOT_SUPPORTED,
                "a user proximal operator runs on host arrays only (x is in %s memory)", space_name(x.space()));
}

void user_rc(int rc, const char *what)
{
    PLM_REQUIRE(rc == 0, PLM_ERR_CALLBACK, "the user proximal %s callback returned %d", what, rc);
}

// Folds what makes two L2 operators the same on every rank.
void fold_l2(comm::Agreement &ag, const L2 &p)
{
    ag.fold(p.op != nullptr);
    ag.fold(p.b != nullptr);
    ag.fold(p.q != nullptr);
    ag.fold_double(p.alpha);
    ag.fold(p.qgrad);
    ag.fold(p.niter);
    ag.fold_double(p.tol);
    ag.fold(p.cg);
    ag.fold(p.warm);
}

// x (and out) against the L2's arrays: with op, x is on op's domain (x0's layout).
void check_l2_operand(const L2 &p, const DistributedArray &x)
{
    if (p.op) x.require_compatible(*p.x0, "L2 prox: x and the operator's domain");
    else if (p.b) x.require_compatible(*p.b, "L2 prox: x and b");
    if (p.q) x.require_compatible(*p.q, "L2 prox: x and q");
}

void apply_l2(comm::Agreement &ag, const L2 &p, double sigma, const DistributedArray &x, double tau,
              DistributedArray &out)
{
    const double ts = tau * sigma;
    ag.check([&] { check_l2_operand(p, x); });
    fold_l2(ag, p);
    if (!p.op) {  // closed form: (x + tau sigma b - tau alpha q) / (1 + tau sigma)
        ag.run();
        copy(x, out);
        if (p.b) axpby(ts, *p.b, 1, out);
        if (p.q) axpby(-(tau * p.alpha), *p.q, 1, out);
        scale(1.0 / (1.0 + ts), out);
        return;
    }
    const DType dt = p.op->dtype();
    DistributedArray::Ptr sol, rhs, rb, optb;
    ops::Operator::Ptr A;
    Info inner;
    // The operands' lists too are made in the check (nothing allocates after an agreement;
    // after a failed check they stay empty and are never read).
    ops::Operator::In bin;
    ops::Operator::Out bout;
    Parts ys, xs;
    ag.check([&] {
        sol = p.x0->empty_like();
        rhs = x.empty_like();
        bin = {p.b.get()};
        xs = {sol.get()};
        const ops::Operator::Ptr I = std::make_shared<Identity>(dt, p.op->domain());
        if (p.cg) {
            optb = x.empty_like();
            bout = {optb.get()};
            ys = {rhs.get()};
            A = ops::sum(I, ops::scaled(ops::product(ops::adjoint(p.op), p.op), make_scalar(dt, ts, 0, "L2 prox")));
        } else {
            rb = p.b->empty_like();
            ys = {rb.get(), rhs.get()};
            A = ops::stacked_vstack({ops::scaled(p.op, make_scalar(dt, std::sqrt(ts), 0, "L2 prox")), I});
        }
    });
    if (p.cg) {
        // OpTb = sigma Op^H b, y = x + tau OpTb - tau alpha q; then CG on I + tau sigma Op^H Op.
        ops::apply(ag, *p.op, bin, bout, true);
        scale(sigma, *optb);
        copy(x, *rhs);
        axpby(tau, *optb, 1, *rhs);
        if (p.q) axpby(-(tau * p.alpha), *p.q, 1, *rhs);
        copy(*p.x0, *sol);
        comm::Agreement ag2(x.base(), "L2 prox CG");
        cg(ag2, *A, ys, xs, p.niter, p.tol, inner, Monitor{});
    } else {
        // CGLS on [sqrt(tau sigma) Op; I] x = [sqrt(tau sigma) b; x - tau alpha q], from x0.
        if (ag.ok())
            ag.check([&] {
                copy(*p.b, *rb);
                scale(std::sqrt(ts), *rb);
                copy(x, *rhs);
                if (p.q) axpby(-(tau * p.alpha), *p.q, 1, *rhs);
                copy(*p.x0, *sol);
            });
        if (!A) A = p.op;  // a failed check: cgls only joins the agreement
        cgls(ag, *A, ys, xs, p.niter, 0, p.tol, inner, Monitor{});
    }
    copy(*sol, out);
    if (p.warm) copy(*sol, *p.x0);
}

}  // namespace

void Prox::apply(comm::Agreement &ag, const DistributedArray &x, double tau, DistributedArray &out) const
{
    ag.check([&] {
        PLM_REQUIRE(std::isfinite(tau) && tau > 0, PLM_ERR_INVALID_ARG, "prox: tau %g is not finite and > 0", tau);
        out.require_compatible(x, "prox");
    });
    x.fold_layout(ag);
    ag.fold(static_cast<int64_t>(kind));
    ag.fold_double(sigma);
    ag.fold_double(tau);
    switch (kind) {
    case Kind::l1:
    case Kind::l0: {
        ag.run();
        copy(x, out);
        // pyproximal: L1 soft-thresholds by tau sigma, L0 hard-thresholds by tau sigma (zero
        // where |x| <= sqrt(2 tau sigma)), the kernels ISTA uses.
        const kernels::Threshold t = kind == Kind::l1 ? kernels::Threshold::soft : kernels::Threshold::hard;
        kernels::threshold(out.exec(), out.dtype(), t, tau * sigma, out.local_size(), out.data());
        return;
    }
    case Kind::box:
        ag.check([&] {
            PLM_REQUIRE(!is_complex(x.dtype()), PLM_ERR_DTYPE_MISMATCH, "the Box prox needs a real dtype, not %s",
                        dtype_name(x.dtype()));
        });
        ag.fold_double(lower);
        ag.fold_double(upper);
        ag.run();
        kernels::box(out.exec(), out.dtype(), false, lower, upper, out.local_size(), x.data(), out.data());
        return;
    case Kind::user: {
        // Into a scratch copy before the agreement (out may be x, and the callback's failure
        // is agreed with the rest).
        DistributedArray::Ptr tmp;
        ag.check([&] {
            require_user_host(x, user.prox != nullptr, "prox");
            tmp = x.empty_like();
            int rc = 0;
            {
                alloc::Allowed user_code;
                rc = user.prox(user.ctx, x.data(), x.local_size(), tau, tmp->data(), to_public(x.dtype()));
            }
            user_rc(rc, "prox");
        });
        ag.run();
        copy(*tmp, out);
        return;
    }
    case Kind::l2: apply_l2(ag, l2, sigma, x, tau, out); return;
    }
}

double Prox::value(comm::Agreement &ag, const DistributedArray &x) const
{
    x.fold_layout(ag);
    ag.fold(static_cast<int64_t>(kind));
    ag.fold_double(sigma);
    switch (kind) {
    // L1: sigma sum |x|; L0: the count of non-zeros, unscaled, as pyproximal's L0.__call__.
    case Kind::l1: return sigma * x.norm(ag, 1.0);
    case Kind::l0: return x.norm(ag, 0.0);
    case Kind::box: {
        // 1 where outside, counted: 1 (true) when none is.
        DistributedArray::Ptr m;
        ag.check([&] {
            PLM_REQUIRE(!is_complex(x.dtype()), PLM_ERR_DTYPE_MISMATCH, "the Box prox needs a real dtype, not %s",
                        dtype_name(x.dtype()));
            m = x.empty_like();
            kernels::box(m->exec(), m->dtype(), true, lower, upper, m->local_size(), x.data(), m->data());
        });
        ag.fold_double(lower);
        ag.fold_double(upper);
        return or_else(m, x).norm(ag, 0.0) == 0 ? 1.0 : 0.0;
    }
    case Kind::user: {
        const ArrayLayout &l = *x.layout_object();
        const size_t lane = ag.add_lanes(static_cast<size_t>(l.ngroups()), comm::LaneOp::sum);
        ag.check([&] {
            require_user_host(x, user.value != nullptr, "value");
            int64_t begin = 0, count = 0;
            x.reduce_share(&begin, &count);
            if (count == 0) return;
            double v = 0;
            int rc = 0;
            {
                alloc::Allowed user_code;
                rc = user.value(user.ctx, static_cast<const char *>(x.data()) + begin * dtype_size(x.dtype()), count,
                                &v, to_public(x.dtype()));
            }
            user_rc(rc, "value");
            ag.set(lane + static_cast<size_t>(l.group_index()), v);
        });
        ag.run();
        return ag.get(lane + static_cast<size_t>(l.group_index()));
    }
    case Kind::l2: {
        // sigma / 2 ||Op x - b||^2 (x for Op x, 0 for b when absent) + alpha Re(q^T x).
        const L2 &p = l2;
        DistributedArray::Ptr r;
        ops::Operator::In in;
        ops::Operator::Out out;
        ag.check([&] {
            check_l2_operand(p, x);
            r = p.op ? p.b->empty_like() : x.empty_like();
            in = {&x};
            out = {r.get()};
        });
        fold_l2(ag, p);
        comm::Agreement ag2(x.base(), "L2 value");
        comm::Agreement *red = &ag;
        if (p.op) {
            ops::apply(ag, *p.op, in, out, false);
            axpby(-1, *p.b, 1, *r);
            red = &ag2;
        } else if (ag.ok()) {
            ag.check([&] {
                copy(x, *r);
                if (p.b) axpby(-1, *p.b, 1, *r);
            });
        }
        const DistributedArray &rr = or_else(r, x);
        const DistributedArray::NormLanes n = rr.add_norm(*red, 2.0);
        const size_t dl = p.q ? x.add_dot(*red, p.q.get(), false) : 0;
        red->run();
        const double nr = rr.read_norm(*red, n);
        double f = (sigma / 2.0) * (nr * nr);
        if (p.q) {
            double re = 0, im = 0;
            x.read_dot(*red, dl, &re, &im);
            f += p.alpha * re;
        }
        return f;
    }
    }
    return 0;
}

void Prox::grad(comm::Agreement &ag, const DistributedArray &x, DistributedArray &out) const
{
    ag.check([&] {
        PLM_REQUIRE(has_grad(), PLM_ERR_NOT_SUPPORTED, "the %s proximal operator has no gradient", kind_name(kind));
        PLM_REQUIRE(&out != &x, PLM_ERR_INVALID_ARG, "prox grad: out must not be x");
        out.require_compatible(x, "prox grad");
    });
    x.fold_layout(ag);
    ag.fold(static_cast<int64_t>(kind));
    ag.fold_double(sigma);
    if (kind == Kind::user) {
        ag.check([&] {
            require_user_host(x, user.grad != nullptr, "grad");
            int rc = 0;
            {
                alloc::Allowed user_code;
                rc = user.grad(user.ctx, x.data(), x.local_size(), out.data(), to_public(x.dtype()));
            }
            user_rc(rc, "grad");
        });
        ag.run();
        return;
    }
    // L2 (others failed the check above and only join the agreement): sigma Op^H (Op x - b),
    // sigma (x - b) or sigma x, plus alpha q when qgrad.
    const L2 &p = l2;
    DistributedArray::Ptr r;
    ops::Operator::In in, rin;  // made in the check, as in apply_l2
    ops::Operator::Out rout, gout;
    ag.check([&] {
        check_l2_operand(p, x);
        if (!p.op) return;
        r = p.b->empty_like();
        in = {&x};
        gout = {&out};
        rin = {r.get()};
        rout = {r.get()};
    });
    fold_l2(ag, p);
    if (p.op) {
        ops::apply(ag, *p.op, in, rout, false);
        axpby(-1, *p.b, 1, *r);
        comm::Agreement ag2(x.base(), "L2 grad");
        ops::apply(ag2, *p.op, rin, gout, true);
    } else {
        ag.run();
        copy(x, out);
        if (p.b) axpby(-1, *p.b, 1, out);
    }
    scale(sigma, out);
    if (p.q && p.qgrad) axpby(p.alpha, *p.q, 1, out);
}

const char *prox_name(const Prox &p) { return kind_name(p.kind); }

}  // namespace plm::solvers
