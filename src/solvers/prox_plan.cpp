#include "solvers/prox_plan.hpp"

#include "kernels/kernels.hpp"
#include "solvers/local_math.hpp"
#include "solvers/proximal_util.hpp"

namespace plm::solvers {

using namespace local;

// ---- Applier ----------------------------------------------------------------------------------

Applier::Applier(const ops::Operator &op, ops::Operator::In in, ops::Operator::Out out, bool adjoint)
    : op_(&op), in_(std::move(in)), out_(std::move(out)), adjoint_(adjoint)
{
    op.check_parts(in_, out_, adjoint);
    const Space s = in_.front()->space();
    ready_ = true;
    for (const DistributedArray *a : in_) ready_ = ready_ && a->space() == s;
    for (const DistributedArray *a : out_) ready_ = ready_ && a->space() == s;
    if (ready_) work_ = ops::WorkLease(op, op.comm().exec(s));
}

void Applier::run(const DistributedArray *in0, DistributedArray *out0) const
{
    if (in0) in_[0] = in0;
    if (out0) out_[0] = out0;
    op_->apply_parts(in_, out_, adjoint_, work_.get());
}

// ---- ProxPlan ---------------------------------------------------------------------------------

namespace {

bool same_space(const DistributedArray &x, const DistributedArray::Ptr &a)
{
    return !a || a->space() == x.space();
}

}  // namespace

ProxPlan::ProxPlan(const Prox &p, const std::vector<const DistributedArray *> &x) : p_(p)
{
    const DistributedArray &x0 = *x.front();
    switch (p.kind) {
    case Prox::Kind::l1:
    case Prox::Kind::l0:
        prox_ = value_ = true;
        break;
    case Prox::Kind::box:
        prox_ = value_ = !is_complex(x0.dtype());  // complex: the agreed call reports it
        if (value_)
            for (const DistributedArray *m : x) outside_.push_back(m->empty_like());
        break;
    case Prox::Kind::l2: {
        const L2 &l = p.l2;
        // One array on the L2's layout (the agreed calls check it), everything in x's space.
        if (x.size() != 1 || !same_space(x0, l.b) || !same_space(x0, l.q)) break;
        if (l.op) {
            x0.require_compatible(*l.x0, "L2 prox: x and the operator's domain");
            if (!l.b) break;
            r_ = l.b->empty_like();
            fwd_ = Applier(*l.op, {&x0}, {r_.get()}, false);
            adj_ = Applier(*l.op, {r_.get()}, {const_cast<DistributedArray *>(&x0)}, true);
            grad_ = value_ = fwd_.ready() && adj_.ready();
        } else {
            if (l.b) x0.require_compatible(*l.b, "L2 prox: x and b");
            r_ = x0.empty_like();
            grad_ = prox_ = value_ = true;
        }
        if (l.q) x0.require_compatible(*l.q, "L2 prox: x and q");
        break;
    }
    default:  // user, L21, compositions: not planned
        break;
    }
}

void ProxPlan::grad(const DistributedArray &x, DistributedArray &out) const
{
    const L2 &l = p_.l2;
    if (l.op) {  // sigma Op^H (Op x - b)
        fwd_.run(&x);
        axpby(-1, *l.b, 1, *r_);
        adj_.run(nullptr, &out);
    } else {  // sigma (x - b), or sigma x
        copy(x, out);
        if (l.b) axpby(-1, *l.b, 1, out);
    }
    if (p_.sigma != 1) scale(p_.sigma, out);
    if (l.q && l.qgrad) axpby(l.alpha, *l.q, 1, out);
}

void ProxPlan::prox(const DistributedArray &a, double tau, DistributedArray &o) const
{
    switch (p_.kind) {
    case Prox::Kind::l1:
    case Prox::Kind::l0:
        // pyproximal: L1 soft-thresholds by tau sigma; L0 zeroes |x| <= tau sigma (l0_at) or
        // |x| <= sqrt(2 tau sigma), as Prox::apply.
        copy(a, o);
        kernels::threshold(o.exec(), o.dtype(),
                           p_.kind == Prox::Kind::l1 ? kernels::Threshold::soft
                           : p_.l0_at                ? kernels::Threshold::hard_at
                                                     : kernels::Threshold::hard,
                           tau * p_.sigma, o.local_size(), o.data());
        return;
    case Prox::Kind::box:
        kernels::box(o.exec(), o.dtype(), false, p_.lower, p_.upper, o.local_size(), a.data(), o.data());
        return;
    case Prox::Kind::l2: {  // (x + tau sigma b - tau alpha q) / (1 + tau sigma)
        const L2 &l = p_.l2;
        const double ts = tau * p_.sigma;
        copy(a, o);
        if (l.b) axpby(ts, *l.b, 1, o);
        if (l.q) axpby(-(tau * l.alpha), *l.q, 1, o);
        scale(1.0 / (1.0 + ts), o);
        return;
    }
    default: return;  // not planned
    }
}

void ProxPlan::prox(const std::vector<const DistributedArray *> &x, double tau,
                    const std::vector<DistributedArray *> &out) const
{
    for (size_t i = 0; i < x.size(); ++i) prox(*x[i], tau, *out[i]);
}

void ProxPlan::add_value(comm::Agreement &ag, const std::vector<const DistributedArray *> &x)
{
    norms_.clear();
    switch (p_.kind) {
    case Prox::Kind::l1:
    case Prox::Kind::l0:
        for (const DistributedArray *m : x) norms_.push_back(m->add_norm(ag, p_.kind == Prox::Kind::l1 ? 1.0 : 0.0));
        return;
    case Prox::Kind::box:
        for (const DistributedArray::Ptr &o : outside_) norms_.push_back(o->add_norm(ag, 0.0));
        return;
    case Prox::Kind::l2:
        norms_.push_back(r_->add_norm(ag, 2.0));
        if (p_.l2.q) dot_ = x.front()->add_dot(ag, p_.l2.q.get(), false);
        return;
    default: return;  // not planned
    }
}

void ProxPlan::set_value(comm::Agreement &ag, const std::vector<const DistributedArray *> &x) const
{
    switch (p_.kind) {
    case Prox::Kind::l1:
    case Prox::Kind::l0:
        for (size_t i = 0; i < x.size(); ++i) x[i]->set_norm(ag, norms_[i]);
        return;
    case Prox::Kind::box:
        for (size_t i = 0; i < x.size(); ++i) {
            DistributedArray &o = *outside_[i];
            kernels::box(o.exec(), o.dtype(), true, p_.lower, p_.upper, o.local_size(), x[i]->data(), o.data());
            o.set_norm(ag, norms_[i]);
        }
        return;
    case Prox::Kind::l2: {  // r = Op x - b, x - b or x
        const L2 &l = p_.l2;
        const DistributedArray &x0 = *x.front();
        if (l.op) fwd_.run(&x0);
        else copy(x0, *r_);
        if (l.b) axpby(-1, *l.b, 1, *r_);
        r_->set_norm(ag, norms_[0]);
        if (l.q) x0.set_dot(ag, dot_, *l.q, false);
        return;
    }
    default: return;  // not planned
    }
}

// The same values as Prox::value and Prox::value_stacked.
double ProxPlan::read_value(const comm::Agreement &ag, const std::vector<const DistributedArray *> &x) const
{
    double sum = 0;
    switch (p_.kind) {
    case Prox::Kind::l1:
    case Prox::Kind::l0:
        for (size_t i = 0; i < x.size(); ++i)
            sum += (p_.kind == Prox::Kind::l1 ? p_.sigma : 1.0) * x[i]->read_norm(ag, norms_[i]);
        return sum;
    case Prox::Kind::box:
        for (size_t i = 0; i < x.size(); ++i) sum += outside_[i]->read_norm(ag, norms_[i]);
        return sum == 0 ? 1.0 : 0.0;
    case Prox::Kind::l2: {  // sigma / 2 ||r||^2 + alpha Re(q^T x)
        const double nr = r_->read_norm(ag, norms_[0]);
        double f = (p_.sigma / 2.0) * (nr * nr);
        if (p_.l2.q) {
            double re = 0, im = 0;
            x.front()->read_dot(ag, dot_, &re, &im);
            f += p_.l2.alpha * re;
        }
        return f;
    }
    default: break;  // not planned
    }
    return 0;
}

}  // namespace plm::solvers
