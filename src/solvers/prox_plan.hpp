// The proximal solvers' steps made ready once per solve (inside the solve's agreement check),
// so that each iteration runs them with no agreement and no allocation of its own.
//
// A step needs an agreement of its own only when it can fail on one rank alone after the
// solve's checks (a user function) or runs a collective solve (the L2 prox with an operator);
// everything else - operator applies (an operator that may fail agrees on its own outcome),
// element-wise proxes, the L2 gradient - only computes and communicates, so it runs planned.
// The values (J for a tolerance or the table) are partials set into the lanes of one reduction
// point of the solver's, one agreement (one allreduce) per iteration for f and g together.
#pragma once

#include <optional>
#include <vector>

#include "ops/operator.hpp"
#include "solvers/proximal.hpp"

namespace plm::solvers {

// An operator apply on fixed operand lists made ready inside a check: run() applies with no
// agreement and allocates nothing. Operands in more than one memory space are not planned
// (ready() false: the caller applies through ops::apply and its agreement, which stages them).
class Applier {
public:
    Applier() = default;
    // Checks the parts (throws as Operator::check_parts) and takes the operator's Work.
    Applier(const ops::Operator &op, ops::Operator::In in, ops::Operator::Out out, bool adjoint);
    bool ready() const { return ready_; }
    // Applies; in0 / out0, when given, replace the first input / output (an iterate that moves
    // between arrays of the layout it was planned with).
    void run(const DistributedArray *in0 = nullptr, DistributedArray *out0 = nullptr) const;

private:
    const ops::Operator *op_ = nullptr;
    mutable ops::Operator::In in_;
    mutable ops::Operator::Out out_;
    bool adjoint_ = false, ready_ = false;
    ops::WorkLease work_;
};

// A proximal operator made ready for steps on arrays of one layout (x's members: one array, or
// a stack's members). Made inside the solve's check (it allocates its work arrays and the L2
// operator's Work). Planned steps run with no agreement and allocate nothing:
// - grad: L2 (sigma Op^H (Op x - b) + alpha q, or its closed forms without op);
// - prox: L1, L0, Box (member by member), L2 without op (closed form);
// - value: L1, L0, Box (summed over the members; Box 1 when all are inside), L2 with or
//   without op: add_value() adds its lanes to the solver's reduction point once, set_value()
//   sets this iteration's partials after the point's rearm(), read_value() after it runs.
// The rest (user functions; the L2 prox with an operator, an inner solve; L21 and the
// compositions) is not planned: the solver calls Prox::apply / grad / value, each with its own agreement.
// Planned L2 steps need x, b, q and their operator in one memory space.
class ProxPlan {
public:
    ProxPlan(const Prox &p, const std::vector<const DistributedArray *> &x);
    bool grad_planned() const { return grad_; }
    bool prox_planned() const { return prox_; }
    bool value_planned() const { return value_; }
    void grad(const DistributedArray &x, DistributedArray &out) const;  // out != x
    // out = prox_{tau f}(x), out may be x; on lists, member by member.
    void prox(const DistributedArray &x, double tau, DistributedArray &out) const;
    void prox(const std::vector<const DistributedArray *> &x, double tau, const std::vector<DistributedArray *> &out) const;
    void add_value(comm::Agreement &ag, const std::vector<const DistributedArray *> &x);
    void set_value(comm::Agreement &ag, const std::vector<const DistributedArray *> &x) const;
    double read_value(const comm::Agreement &ag, const std::vector<const DistributedArray *> &x) const;

private:
    const Prox &p_;
    bool grad_ = false, prox_ = false, value_ = false;
    DistributedArray::Ptr r_;            // L2: Op x - b (op's range) or x - b
    Applier fwd_, adj_;                  // L2 with op: x -> r_, r_ -> out
    std::vector<DistributedArray::Ptr> outside_;       // Box value: 1 where a member is outside
    std::vector<DistributedArray::NormLanes> norms_;  // per member (L2: r_'s)
    size_t dot_ = 0;                                  // L2 with q: the q^T x lanes
};

}  // namespace plm::solvers
