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

// Folds an operator's kind and numbers (a user operator's functions present), its arrays'
// layouts and its inner operators'.
void fold_prox(comm::Agreement &ag, const Prox &p)
{
    ag.fold(static_cast<int64_t>(p.kind));
    ag.fold_double(p.sigma);
    switch (p.kind) {
    case Prox::Kind::box:
        ag.fold_double(p.lower);
        ag.fold_double(p.upper);
        break;
    case Prox::Kind::l0: ag.fold(p.l0_at); break;
    case Prox::Kind::l21: ag.fold(p.ndim); break;
    case Prox::Kind::l2: fold_l2(ag, p.l2); break;
    case Prox::Kind::pre:
        ag.fold_double(p.a);
        ag.fold_double(p.b);
        break;
    case Prox::Kind::user:
        ag.fold(p.user.prox != nullptr);
        ag.fold(p.user.value != nullptr);
        ag.fold(p.user.grad != nullptr);
        break;
    default: break;
    }
    ag.fold(p.vec != nullptr);
    if (p.vec) p.vec->fold_layout(ag);
    if (p.f) fold_prox(ag, *p.f);
    if (p.g) fold_prox(ag, *p.g);
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
    case Prox::Kind::l21: return "L21";
    case Prox::Kind::post: return "postcomposition";
    case Prox::Kind::pre: return "precomposition";
    case Prox::Kind::affine: return "affine addition";
    case Prox::Kind::chain: return "chain";
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

void require_tau(double tau)
{
    PLM_REQUIRE(std::isfinite(tau) && tau > 0, PLM_ERR_INVALID_ARG, "prox: tau %g is not finite and > 0", tau);
}

void require_real(const DistributedArray &x)
{
    PLM_REQUIRE(!is_complex(x.dtype()), PLM_ERR_DTYPE_MISMATCH, "the Box prox needs a real dtype, not %s",
                dtype_name(x.dtype()));
}

// One array, not a stack, for the operators holding arrays (L2, a precomposition with an
// array b, an affine addition).
void require_single(const In &xs, const char *what)
{
    PLM_REQUIRE(!xs.stacked() && xs.size() == 1, PLM_ERR_NOT_SUPPORTED,
                "the %s proximal operator takes single arrays, not stacks (as PyLops-MPI's MPIL2)", what);
}

// x (and out) against the L2's arrays: with op, x is on op's domain (x0's layout).
void check_l2_operand(const L2 &p, const DistributedArray &x)
{
    if (p.op) x.require_compatible(*p.x0, "L2 prox: x and the operator's domain");
    else if (p.b) x.require_compatible(*p.b, "L2 prox: x and b");
    if (p.q) x.require_compatible(*p.q, "L2 prox: x and q");
}

// Scratch arrays, one per member of a list, made in a check; until then (or after a failed
// check) its views are the fallback lists the caller gives.
class Scratch {
public:
    // One array like each of xs (the dtype and layout of xs[i]); real: of its real dtype.
    void make(const In &xs, bool real = false)
    {
        for (size_t i = 0; i < xs.size(); ++i) arrays_.push_back(real ? real_like(xs[i]) : xs[i].empty_like());
        for (const DistributedArray::Ptr &a : arrays_) ptrs_.push_back(a.get());
    }
    bool made() const { return !ptrs_.empty() && ptrs_.size() == arrays_.size(); }
    Out out(const Out &fallback) const { return made() ? Out(ptrs_.data(), ptrs_.size()) : fallback; }
    In in(const In &fallback) const { return made() ? In(out(Out())) : fallback; }
    DistributedArray &operator[](size_t i) const { return *ptrs_[i]; }

    static DistributedArray::Ptr real_like(const DistributedArray &x)
    {
        const DType r = x.dtype() == DType::f32 || x.dtype() == DType::c64 ? DType::f32 : DType::f64;
        return DistributedArray::create_from_layout(x.layout_object(), to_public(r),
                                                    x.space() == Space::device ? PLM_MEMORY_DEVICE : PLM_MEMORY_HOST,
                                                    nullptr, 0);
    }

private:
    std::vector<DistributedArray::Ptr> arrays_;
    std::vector<DistributedArray *> ptrs_;
};

// y = value on every element of y.
void fill_value(double value, DistributedArray &y)
{
    const Scalar s = make_scalar(y.dtype(), value, 0, "prox");
    kernels::fill(y.exec(), y.dtype(), y.local_size(), s.data(), y.data());
}

// ---- L2 ------------------------------------------------------------------------------------

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

// sigma / 2 ||Op x - b||^2 (x for Op x, 0 for b when absent) + alpha Re(q^T x).
double value_l2(comm::Agreement &ag, const L2 &p, double sigma, const DistributedArray &x)
{
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

// sigma Op^H (Op x - b), sigma (x - b) or sigma x, plus alpha q when qgrad.
void grad_l2(comm::Agreement &ag, const L2 &p, double sigma, const DistributedArray &x, DistributedArray &out)
{
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

// ---- the element-wise kinds (L1, L0, Box, user) --------------------------------------------

// The prox of L1, L0, Box or user on member pairs xs[i] -> outs[i], through one agreement.
void separable_apply(const Prox &p, comm::Agreement &ag, const In &xs, double tau, const Out &outs)
{
    ag.fold(static_cast<int64_t>(p.kind));
    ag.fold_double(p.sigma);
    ag.fold_double(tau);
    switch (p.kind) {
    case Prox::Kind::l1:
    case Prox::Kind::l0: {
        ag.fold(p.l0_at);
        ag.run();
        // pyproximal: L1 soft-thresholds by tau sigma; L0 zeroes |x| <= tau sigma (pyproximal's
        // rule, l0_at) or |x| <= sqrt(2 tau sigma) (the exact prox, PyLops' hard threshold).
        const kernels::Threshold t = p.kind == Prox::Kind::l1 ? kernels::Threshold::soft
                                     : p.l0_at              ? kernels::Threshold::hard_at
                                                            : kernels::Threshold::hard;
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
                    rc = p.user.prox(p.user.ctx(), x.data(), x.local_size(), tau, tmp.back()->data(),
                                     to_public(x.dtype()));
                }
                user_rc(rc, "prox");
            }
        });
        ag.run();
        for (size_t i = 0; i < tmp.size(); ++i) copy(*tmp[i], outs[i]);
        return;
    }
    default: break;  // not element-wise: never called with these
    }
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
                rc = p.user.value(p.user.ctx(), static_cast<const char *>(x.data()) + begin * dtype_size(x.dtype()),
                                  count, &part, to_public(x.dtype()));
            }
            user_rc(rc, "value");
            ag.set(v.lane + static_cast<size_t>(l.group_index()), part);
        });
        return;
    }
    default: return;
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
    default: break;
    }
    return 0;
}

// f summed over the members (a single array: one), kinds L1, L0, Box and user, through one
// agreement; Box gives 1 when no member has an element outside, else 0 (PyLops-MPI's `all`).
double separable_value(const Prox &p, comm::Agreement &ag, const In &xs)
{
    ag.fold(static_cast<int64_t>(p.kind));
    ag.fold_double(p.sigma);
    if (p.kind == Prox::Kind::box) {
        ag.fold_double(p.lower);
        ag.fold_double(p.upper);
    }
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

bool separable(Prox::Kind k)
{
    return k == Prox::Kind::l1 || k == Prox::Kind::l0 || k == Prox::Kind::box || k == Prox::Kind::user;
}

// ---- L21 -----------------------------------------------------------------------------------

// ndim members of one layout and dtype (a single array: ndim 1).
void check_l21(const Prox &p, const In &xs)
{
    PLM_REQUIRE(static_cast<int64_t>(xs.size()) == p.ndim, PLM_ERR_SIZE_MISMATCH,
                "L21: expected %lld distributed arrays (ndim), got %zu", static_cast<long long>(p.ndim), xs.size());
    for (size_t i = 1; i < xs.size(); ++i) xs[i].require_compatible(xs[0], "L21: the members");
}

// Each group's squared norm into n2 (a real array on the members' layout).
void group_norms(const In &xs, DistributedArray &n2)
{
    for (size_t i = 0; i < xs.size(); ++i)
        kernels::group_add(n2.exec(), xs[i].dtype(), n2.local_size(), xs[i].data(), i == 0, n2.data());
}

// outs[i] = (1 - t / max(s, t)) xs[i] (prox, t = tau sigma) or (t / max(s, t)) xs[i] (dual,
// t = sigma), s the group norm at each index.
void l21_step(const Prox &p, comm::Agreement &ag, const In &xs, double t, kernels::Group kind, const Out &outs)
{
    ag.fold(static_cast<int64_t>(p.kind));
    ag.fold(p.ndim);
    ag.fold_double(t);
    ag.fold(static_cast<int64_t>(kind));
    DistributedArray::Ptr n2;
    ag.check([&] {
        check_l21(p, xs);
        n2 = Scratch::real_like(xs[0]);
    });
    ag.run();
    group_norms(xs, *n2);
    for (size_t i = 0; i < xs.size(); ++i)
        kernels::group_scale(n2->exec(), xs[i].dtype(), kind, t, n2->local_size(), n2->data(), xs[i].data(),
                             outs[i].data());
}

// sigma sum_j ||group j||_2, reduced over the members' mask group.
double l21_value(const Prox &p, comm::Agreement &ag, const In &xs)
{
    ag.fold(static_cast<int64_t>(p.kind));
    ag.fold(p.ndim);
    ag.fold_double(p.sigma);
    DistributedArray::Ptr n2;
    ag.check([&] {
        check_l21(p, xs);
        n2 = Scratch::real_like(xs[0]);
        group_norms(xs, *n2);
        kernels::group_norm(n2->exec(), n2->dtype(), n2->local_size(), n2->data());
    });
    if (xs.size() == 0) {
        ag.run();
        return 0;
    }
    const DistributedArray &s = or_else(n2, xs[0]);
    const DistributedArray::NormLanes l = s.add_norm(ag, 1.0);
    ag.run();
    return p.sigma * s.read_norm(ag, l);
}

}  // namespace

// ---- the operations ------------------------------------------------------------------------

bool Prox::has_grad() const
{
    switch (kind) {
    case Kind::l2: return true;
    case Kind::user: return user.grad != nullptr;
    case Kind::post:
    case Kind::pre:
    case Kind::affine: return f->has_grad();
    case Kind::chain: return f->has_grad() && g->has_grad();
    default: return false;
    }
}

bool Prox::single_only() const
{
    return kind == Kind::l2 || vec || (f && f->single_only()) || (g && g->single_only());
}

void Prox::apply(comm::Agreement &ag, const In &xs, double tau, const Out &outs) const
{
    if (separable(kind)) return separable_apply(*this, ag, xs, tau, outs);
    ag.fold(static_cast<int64_t>(kind));
    ag.fold_double(tau);
    switch (kind) {
    case Kind::l2:
        ag.fold_double(sigma);
        ag.check([&] { require_single(xs, "L2"); });
        if (xs.size() != 1) return ag.run();
        return apply_l2(ag, l2, sigma, xs[0], tau, outs[0]);
    case Kind::l21: return l21_step(*this, ag, xs, tau * sigma, kernels::Group::prox, outs);
    case Kind::post:  // prox_{tau sigma f}
        ag.fold_double(sigma);
        return f->apply(ag, xs, sigma * tau, outs);
    case Kind::pre: {  // (prox_{a^2 tau f}(a x + b) - b) / a
        Scratch w;
        ag.check([&] {
            if (vec) require_single(xs, "precomposition (with an array b)");
            w.make(xs);
            for (size_t i = 0; i < xs.size(); ++i) {
                if (vec) copy(*vec, w[i]);
                else fill_value(b, w[i]);
                axpby(a, xs[i], 1, w[i]);
            }
        });
        f->apply(ag, w.in(xs), a * a * tau, outs);
        for (size_t i = 0; i < outs.size(); ++i) {
            if (vec) copy(*vec, w[i]);
            else fill_value(b, w[i]);
            axpby(-1, w[i], 1, outs[i]);
            scale(1.0 / a, outs[i]);
        }
        return;
    }
    case Kind::affine: {  // prox_{tau f}(x - tau v)
        Scratch w;
        ag.check([&] {
            require_single(xs, "affine addition");
            xs[0].require_compatible(*vec, "affine addition: x and v");
            w.make(xs);
            copy(xs[0], w[0]);
            axpby(-tau, *vec, 1, w[0]);
        });
        return f->apply(ag, w.in(xs), tau, outs);
    }
    case Kind::chain: {  // prox_{tau g}(prox_{tau f}(x))
        Scratch t;
        ag.check([&] { t.make(xs); });
        f->apply(ag, xs, tau, t.out(outs));
        comm::Agreement ag2(ag.comm(), "prox chain");
        return g->apply(ag2, t.in(xs), tau, outs);
    }
    default: break;
    }
    ag.run();
}

double Prox::value(comm::Agreement &ag, const In &xs) const
{
    if (separable(kind)) return separable_value(*this, ag, xs);
    ag.fold(static_cast<int64_t>(kind));
    switch (kind) {
    case Kind::l2:
        ag.fold_double(sigma);
        ag.check([&] { require_single(xs, "L2"); });
        if (xs.size() != 1) {
            ag.run();
            return 0;
        }
        return value_l2(ag, l2, sigma, xs[0]);
    case Kind::l21: return l21_value(*this, ag, xs);
    case Kind::post: ag.fold_double(sigma); return sigma * f->value(ag, xs);
    case Kind::pre: {  // f(a x + b)
        Scratch w;
        ag.check([&] {
            if (vec) require_single(xs, "precomposition (with an array b)");
            w.make(xs);
            for (size_t i = 0; i < xs.size(); ++i) {
                if (vec) copy(*vec, w[i]);
                else fill_value(b, w[i]);
                axpby(a, xs[i], 1, w[i]);
            }
        });
        return f->value(ag, w.in(xs));
    }
    case Kind::affine: {  // f(x) + Re(v^T x)
        ag.check([&] {
            require_single(xs, "affine addition");
            xs[0].require_compatible(*vec, "affine addition: x and v");
        });
        const double fv = f->value(ag, xs);
        comm::Agreement a2(ag.comm(), "prox value (affine addition)");
        const size_t lane = xs[0].add_dot(a2, vec.get(), false);
        a2.run();
        double re = 0, im = 0;
        xs[0].read_dot(a2, lane, &re, &im);
        return fv + re;
    }
    case Kind::chain: {  // f(x) + g(x) (pyproximal's g(f(x)) is not defined for vectors)
        const double fv = f->value(ag, xs);
        comm::Agreement a2(ag.comm(), "prox value (chain)");
        return fv + g->value(a2, xs);
    }
    default: break;
    }
    ag.run();
    return 0;
}

void Prox::dual(comm::Agreement &ag, const In &xs, double tau, const Out &outs) const
{
    ag.fold(static_cast<int64_t>(kind));
    ag.fold_double(tau);
    const bool real = xs.size() > 0 && !is_complex(xs[0].dtype());  // the dtype is folded with the layouts
    if (kind == Kind::l1 && real) {  // pyproximal: the projection on [-sigma, sigma]
        ag.fold_double(sigma);
        ag.run();
        for (size_t i = 0; i < xs.size(); ++i)
            kernels::box(outs[i].exec(), outs[i].dtype(), false, -sigma, sigma, outs[i].local_size(), xs[i].data(),
                         outs[i].data());
        return;
    }
    if (kind == Kind::l21) return l21_step(*this, ag, xs, sigma, kernels::Group::dual, outs);
    // Moreau: x - tau prox_{f / tau}(x / tau)
    Scratch w;
    ag.check([&] {
        w.make(xs);
        for (size_t i = 0; i < xs.size(); ++i) {
            copy(xs[i], w[i]);
            scale(1.0 / tau, w[i]);
        }
    });
    const Out wo = w.out(outs);
    apply(ag, w.in(xs), 1.0 / tau, wo);
    for (size_t i = 0; i < outs.size(); ++i) {
        copy(xs[i], outs[i]);
        axpby(-tau, w[i], 1, outs[i]);
    }
}

void Prox::grad(comm::Agreement &ag, const In &xs, const Out &outs, double sigmame) const
{
    ag.fold(static_cast<int64_t>(kind));
    ag.fold_double(sigmame);
    ag.check([&] {
        for (size_t i = 0; i < xs.size() && i < outs.size(); ++i)
            PLM_REQUIRE(&outs[i] != &xs[i], PLM_ERR_INVALID_ARG, "prox grad: out must not be x");
    });
    switch (kind) {
    case Kind::l2:
        ag.fold_double(sigma);
        ag.check([&] { require_single(xs, "L2"); });
        if (xs.size() != 1) return ag.run();
        return grad_l2(ag, l2, sigma, xs[0], outs[0]);
    case Kind::post:  // sigma grad f(x)
        ag.fold_double(sigma);
        f->grad(ag, xs, outs, sigmame);
        for (size_t i = 0; i < outs.size(); ++i) scale(sigma, outs[i]);
        return;
    case Kind::pre: {  // a grad f(a x + b)
        Scratch w;
        ag.check([&] {
            if (vec) require_single(xs, "precomposition (with an array b)");
            w.make(xs);
            for (size_t i = 0; i < xs.size(); ++i) {
                if (vec) copy(*vec, w[i]);
                else fill_value(b, w[i]);
                axpby(a, xs[i], 1, w[i]);
            }
        });
        f->grad(ag, w.in(xs), outs, sigmame);
        for (size_t i = 0; i < outs.size(); ++i) scale(a, outs[i]);
        return;
    }
    case Kind::affine:  // grad f(x) + v
        ag.check([&] {
            require_single(xs, "affine addition");
            xs[0].require_compatible(*vec, "affine addition: x and v");
        });
        f->grad(ag, xs, outs, sigmame);
        if (outs.size() == 1) axpby(1, *vec, 1, outs[0]);
        return;
    case Kind::chain: {  // grad f(x) + grad g(x) (pyproximal's chain has none)
        f->grad(ag, xs, outs, sigmame);
        comm::Agreement ag2(ag.comm(), "prox grad (chain)");
        Scratch t;
        ag2.check([&] { t.make(xs); });
        g->grad(ag2, xs, t.out(outs), sigmame);
        for (size_t i = 0; i < outs.size(); ++i) axpby(1, t[i], 1, outs[i]);
        return;
    }
    case Kind::user:
        if (user.grad) {
            ag.check([&] {
                for (size_t i = 0; i < xs.size(); ++i) {
                    const DistributedArray &x = xs[i];
                    require_user_host(x, true, "grad");
                    int rc = 0;
                    {
                        alloc::Allowed user_code;
                        rc = user.grad(user.ctx(), x.data(), x.local_size(), outs[i].data(), to_public(x.dtype()));
                    }
                    user_rc(rc, "grad");
                }
            });
            return ag.run();
        }
        break;
    default: break;
    }
    // No gradient: the Moreau envelope's (x - prox_{sigmame f}(x)) / sigmame, or none.
    ag.check([&] {
        PLM_REQUIRE(sigmame > 0, PLM_ERR_NOT_SUPPORTED, "the %s proximal operator has no gradient", kind_name(kind));
        require_tau(sigmame);
    });
    apply(ag, xs, sigmame, outs);
    for (size_t i = 0; i < outs.size(); ++i) {
        axpby(1, xs[i], -1, outs[i]);
        scale(1.0 / sigmame, outs[i]);
    }
}

// ---- the C API's forms -----------------------------------------------------------------------

void Prox::apply(comm::Agreement &ag, const DistributedArray &x, double tau, DistributedArray &out) const
{
    ag.check([&] {
        require_tau(tau);
        out.require_compatible(x, "prox");
    });
    x.fold_layout(ag);
    fold_prox(ag, *this);
    apply(ag, In(x), tau, Out(out));
}

void Prox::apply_stacked(comm::Agreement &ag, const StackedArray &x, double tau, StackedArray &out) const
{
    ag.check([&] {
        PLM_REQUIRE(!single_only(), PLM_ERR_NOT_SUPPORTED,
                    "the %s proximal operator takes single arrays, not stacks (as PyLops-MPI's MPIL2)", kind_name(kind));
        require_tau(tau);
        out.require_compatible(x, "prox (stacked)");
    });
    ag.fold(static_cast<int64_t>(x.members().size()));
    for (const auto &m : x.members()) m->fold_layout(ag);
    fold_prox(ag, *this);
    apply(ag, In(x.members()), tau, Out(out.members()));
}

double Prox::value_stacked(comm::Agreement &ag, const StackedArray &x) const
{
    ag.check([&] {
        PLM_REQUIRE(!single_only(), PLM_ERR_NOT_SUPPORTED,
                    "the %s proximal operator takes single arrays, not stacks (as PyLops-MPI's MPIL2)", kind_name(kind));
    });
    ag.fold(static_cast<int64_t>(x.members().size()));
    for (const auto &m : x.members()) m->fold_layout(ag);
    fold_prox(ag, *this);
    return value(ag, In(x.members()));
}

double Prox::value(comm::Agreement &ag, const DistributedArray &x) const
{
    x.fold_layout(ag);
    fold_prox(ag, *this);
    return value(ag, In(x));
}

void Prox::grad(comm::Agreement &ag, const DistributedArray &x, DistributedArray &out) const
{
    ag.check([&] {
        PLM_REQUIRE(has_grad(), PLM_ERR_NOT_SUPPORTED, "the %s proximal operator has no gradient", kind_name(kind));
        PLM_REQUIRE(&out != &x, PLM_ERR_INVALID_ARG, "prox grad: out must not be x");
        out.require_compatible(x, "prox grad");
    });
    x.fold_layout(ag);
    fold_prox(ag, *this);
    grad(ag, In(x), Out(out), 0.0);
}

const char *prox_name(const Prox &p) { return kind_name(p.kind); }

}  // namespace plm::solvers
