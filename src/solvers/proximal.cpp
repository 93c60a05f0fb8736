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

namespace {

// A stack's members, or one array, as a list made without allocating (so the agreement's
// lanes, one set per member, are the same on every rank whatever a check did).
template <typename A, typename S> struct MemberList {
    S *stack = nullptr;
    A *one = nullptr;
    size_t size() const { return stack ? stack->members().size() : 1; }
    A &operator[](size_t i) const { return stack ? *stack->members()[i] : *one; }
};
using Members = MemberList<const DistributedArray, const StackedArray>;
using OutMembers = MemberList<DistributedArray, StackedArray>;

void require_tau(double tau)
{
    PLM_REQUIRE(std::isfinite(tau) && tau > 0, PLM_ERR_INVALID_ARG, "prox: tau %g is not finite and > 0", tau);
}

void require_real(const DistributedArray &x)
{
    PLM_REQUIRE(!is_complex(x.dtype()), PLM_ERR_DTYPE_MISMATCH, "the Box prox needs a real dtype, not %s",
                dtype_name(x.dtype()));
}

void require_separable(Prox::Kind k)
{
    PLM_REQUIRE(k != Prox::Kind::l2, PLM_ERR_NOT_SUPPORTED,
                "the L2 proximal operator takes single arrays, not stacks (as PyLops-MPI's MPIL2)");
}

// The prox of the element-wise kinds (L1, L0, Box, user) on member pairs xs[i] -> outs[i] (a
// single array is one pair), through one agreement (outs are checked against xs by then).
void separable_apply(const Prox &p, comm::Agreement &ag, const Members &xs, double tau, const OutMembers &outs)
{
    ag.fold(static_cast<int64_t>(p.kind));
    ag.fold_double(p.sigma);
    ag.fold_double(tau);
    switch (p.kind) {
    case Prox::Kind::l1:
    case Prox::Kind::l0: {
        ag.run();
        // pyproximal: L1 soft-thresholds by tau sigma, L0 hard-thresholds by tau sigma (zero
        // where |x| <= sqrt(2 tau sigma)), the kernels ISTA uses.
        const kernels::Threshold t = p.kind == Prox::Kind::l1 ? kernels::Threshold::soft : kernels::Threshold::hard;
        for (size_t i = 0; i < xs.size(); ++i) {
            DistributedArray &out = outs[i];
            copy(xs[i], out);
            kernels::threshold(out.exec(), out.dtype(), t, tau * p.sigma, out.local_size(), out.data());
        }
        return;
    }
    case Prox::Kind::box:
        ag.check([&] {
            for (size_t i = 0; i < xs.size(); ++i) require_real(xs[i]);
        });
        ag.fold_double(p.lower);
        ag.fold_double(p.upper);
        ag.run();
        for (size_t i = 0; i < xs.size(); ++i) {
            DistributedArray &out = outs[i];
            kernels::box(out.exec(), out.dtype(), false, p.lower, p.upper, out.local_size(), xs[i].data(), out.data());
        }
        return;
    case Prox::Kind::user: {
        // Into scratch copies before the agreement (out may be x, and the callback's failure
        // is agreed with the rest).
        std::vector<DistributedArray::Ptr> tmp;
        ag.check([&] {
            for (size_t i = 0; i < xs.size(); ++i) {
                const DistributedArray &x = xs[i];
                require_user_host(x, p.user.prox != nullptr, "prox");
                tmp.push_back(x.empty_like());
                int rc = 0;
                {
                    alloc::Allowed user_code;
                    rc = p.user.prox(p.user.ctx, x.data(), x.local_size(), tau, tmp.back()->data(), to_public(x.dtype()));
                }
                user_rc(rc, "prox");
            }
        });
        ag.run();
        for (size_t i = 0; i < tmp.size(); ++i) copy(*tmp[i], outs[i]);
        return;
    }
    case Prox::Kind::l2: break;  // not separable: refused by the callers' checks
    }
    ag.check([&] { require_separable(p.kind); });
    ag.run();
}

// One member's part of a separable value, in a shared agreement: the lanes added before
// run(), read after.
struct MemberValue {
    DistributedArray::NormLanes norm{};  // L1, L0; Box: the count of elements outside
    DistributedArray::Ptr outside;       // Box: 1 where an element lies outside [lower, upper]
    size_t lane = 0;                     // user: the first of the mask groups' lanes
};

void add_member_value(const Prox &p, comm::Agreement &ag, const DistributedArray &x, MemberValue &v)
{
    switch (p.kind) {
    case Prox::Kind::l1: v.norm = x.add_norm(ag, 1.0); return;
    case Prox::Kind::l0: v.norm = x.add_norm(ag, 0.0); return;
    case Prox::Kind::box:
        ag.check([&] {
            require_real(x);
            v.outside = x.empty_like();
            kernels::box(v.outside->exec(), v.outside->dtype(), true, p.lower, p.upper, x.local_size(), x.data(),
                         v.outside->data());
        });
        v.norm = or_else(v.outside, x).add_norm(ag, 0.0);
        return;
    case Prox::Kind::user: {
        const ArrayLayout &l = *x.layout_object();
        v.lane = ag.add_lanes(static_cast<size_t>(l.ngroups()), comm::LaneOp::sum);
        ag.check([&] {
            require_user_host(x, p.user.value != nullptr, "value");
            int64_t begin = 0, count = 0;
            x.reduce_share(&begin, &count);
            if (count == 0) return;
            double part = 0;
            int rc = 0;
            {
                alloc::Allowed user_code;
                rc = p.user.value(p.user.ctx, static_cast<const char *>(x.data()) + begin * dtype_size(x.dtype()),
                                  count, &part, to_public(x.dtype()));
            }
            user_rc(rc, "value");
            ag.set(v.lane + static_cast<size_t>(l.group_index()), part);
        });
        return;
    }
    case Prox::Kind::l2: return;
    }
}

// L1: sigma sum |x|; L0: the count of non-zeros, unscaled, as pyproximal's L0.__call__; Box:
// the count of elements outside (the caller turns 0 into 1); user: the group's sum.
double read_member_value(const Prox &p, const comm::Agreement &ag, const DistributedArray &x, const MemberValue &v)
{
    switch (p.kind) {
    case Prox::Kind::l1: return p.sigma * x.read_norm(ag, v.norm);
    case Prox::Kind::l0: return x.read_norm(ag, v.norm);
    case Prox::Kind::box: return or_else(v.outside, x).read_norm(ag, v.norm);
    case Prox::Kind::user: return ag.get(v.lane + static_cast<size_t>(x.layout_object()->group_index()));
    case Prox::Kind::l2: break;
    }
    return 0;
}

// f summed over the members (a single array: one), kinds L1, L0, Box and user, through one
// agreement; Box gives 1 when no member has an element outside, else 0 (PyLops-MPI's `all`).
double separable_value(const Prox &p, comm::Agreement &ag, const Members &xs)
{
    ag.fold(static_cast<int64_t>(p.kind));
    ag.fold_double(p.sigma);
    if (p.kind == Prox::Kind::box) {
        ag.fold_double(p.lower);
        ag.fold_double(p.upper);
    }
    ag.check([&] { require_separable(p.kind); });
    std::vector<MemberValue> parts;
    ag.check([&] { parts.resize(xs.size()); });
    MemberValue spare;  // after a failed check: the lanes are added all the same
    for (size_t i = 0; i < xs.size(); ++i) add_member_value(p, ag, xs[i], i < parts.size() ? parts[i] : spare);
    ag.run();
    double sum = 0;
    for (size_t i = 0; i < xs.size(); ++i) sum += read_member_value(p, ag, xs[i], parts[i]);
    if (p.kind == Prox::Kind::box) return sum == 0 ? 1.0 : 0.0;
    return sum;
}

// x's member count and layouts folded (out's are checked against them).
void fold_stack(comm::Agreement &ag, const StackedArray &x)
{
    ag.fold(static_cast<int64_t>(x.members().size()));
    for (const auto &m : x.members()) m->fold_layout(ag);
}

}  // namespace

void Prox::apply(comm::Agreement &ag, const DistributedArray &x, double tau, DistributedArray &out) const
{
    ag.check([&] {
        require_tau(tau);
        out.require_compatible(x, "prox");
    });
    x.fold_layout(ag);
    if (kind != Kind::l2) return separable_apply(*this, ag, Members{nullptr, &x}, tau, OutMembers{nullptr, &out});
    ag.fold(static_cast<int64_t>(kind));
    ag.fold_double(sigma);
    ag.fold_double(tau);
    apply_l2(ag, l2, sigma, x, tau, out);
}

void Prox::apply_stacked(comm::Agreement &ag, const StackedArray &x, double tau, StackedArray &out) const
{
    ag.check([&] {
        require_separable(kind);
        require_tau(tau);
        out.require_compatible(x, "prox (stacked)");
    });
    fold_stack(ag, x);
    separable_apply(*this, ag, Members{&x, nullptr}, tau, OutMembers{&out, nullptr});
}

double Prox::value_stacked(comm::Agreement &ag, const StackedArray &x) const
{
    fold_stack(ag, x);
    return separable_value(*this, ag, Members{&x, nullptr});
}

double Prox::value(comm::Agreement &ag, const DistributedArray &x) const
{
    x.fold_layout(ag);
    if (kind != Kind::l2) return separable_value(*this, ag, Members{nullptr, &x});
    ag.fold(static_cast<int64_t>(kind));
    ag.fold_double(sigma);
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
