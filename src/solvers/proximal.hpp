// Proximal operators on distributed arrays (pyproximal's L1, L0 and Box as PyLops-MPI's
// MPIProxOperator wraps them, PyLops-MPI's MPIL2 and MPIL21, user callbacks on local data, and
// pyproximal's compositions: postcomposition, precomposition, affine addition, chain) and the
// proximal solvers (ProximalGradient with or without backtracking, ADMML2, PrimalDual,
// AdaptivePrimalDual).
//
// L1, L0, Box and user proxes are element-wise on each rank's local data, L21 on groups of
// elements at one index of the members of a stack; their values are one reduction over the
// array's mask group. L2 with an operator runs the operator and an inner CG / CGLS solve: its
// calls are a sequence of agreed collective steps (the apply, the inner solve's own agreement),
// each allocating inside its own agreement's check. A composition runs its inner operators'
// steps in turn, each after the one before on a new agreement (a chain, the dot of an affine
// addition's value), its scratch arrays made in the check of the agreement that first needs them.
#pragma once

#include <memory>

#include "array/distributed_array.hpp"
#include "array/stacked_array.hpp"
#include "ops/operator.hpp"
#include "solvers/solvers.hpp"

namespace plm::solvers {

// PyLops-MPI's MPIL2 (see plm_prox_create_l2).
struct L2 {
    ops::Operator::Ptr op;       // may be null
    DistributedArray::Ptr b, q;  // copies; may be null
    double alpha = 1;
    bool qgrad = true;
    int64_t niter = 10;
    double tol = 1e-4;
    bool cg = false;  // inner solver: CG on the normal equations, else CGLS
    bool warm = true;
    DistributedArray::Ptr x0;  // with op: the inner solve's start (updated when warm)
};

// User functions (plm_prox_create_callback). ctx is destroyed with its last holder (a
// composition holds the operators it was made from).
struct UserCtx {
    void *ctx = nullptr;
    void (*destroy)(void *) = nullptr;
    UserCtx() = default;
    UserCtx(const UserCtx &) = delete;
    UserCtx &operator=(const UserCtx &) = delete;
    ~UserCtx()
    {
        if (destroy) destroy(ctx);
    }
};
struct UserProx {
    plm_prox_fn prox = nullptr;
    plm_prox_value_fn value = nullptr;
    plm_prox_grad_fn grad = nullptr;
    std::shared_ptr<UserCtx> owner;
    void *ctx() const { return owner ? owner->ctx : nullptr; }
};

// The arrays a proximal operator works on, as a list made without allocating: a stack's
// members, one array, or n arrays of a pointer list (scratch made in a check). The same
// operations take single arrays (a list of one) and stacks.
template <typename A> class ArrayList {
public:
    ArrayList() = default;
    explicit ArrayList(A &one) : one_(&one) {}
    explicit ArrayList(const std::vector<DistributedArray::Ptr> &members) : stack_(&members) {}
    ArrayList(A *const *list, size_t n) : list_(list), n_(n) {}
    // A list of arrays convertible to A (a non-const list seen as a const one).
    template <typename B> ArrayList(const ArrayList<B> &o) : one_(o.one_), stack_(o.stack_), list_(o.list_), n_(o.n_) {}

    size_t size() const { return stack_ ? stack_->size() : list_ ? n_ : one_ ? 1 : 0; }
    A &operator[](size_t i) const { return stack_ ? *(*stack_)[i] : list_ ? *list_[i] : *one_; }
    bool stacked() const { return stack_ != nullptr; }

private:
    template <typename B> friend class ArrayList;
    A *one_ = nullptr;
    const std::vector<DistributedArray::Ptr> *stack_ = nullptr;
    A *const *list_ = nullptr;
    size_t n_ = 0;
};
using In = ArrayList<const DistributedArray>;
using Out = ArrayList<DistributedArray>;

struct Prox {
    enum class Kind { l1, l0, box, l2, user, l21, post, pre, affine, chain };
    Kind kind = Kind::l1;
    double sigma = 1;             // l1, l0, l21; post: the factor
    double lower = 0, upper = 0;  // box
    bool l0_at = false;           // L0: zero where |x| <= tau sigma (pyproximal), else sqrt(2 tau sigma)
    int64_t ndim = 1;             // l21: members of a stack (a single array: 1)
    double a = 1, b = 0;          // pre: f(a x + b), b a number when vec is null
    DistributedArray::Ptr vec;    // pre: b as an array; affine: v (copies)
    std::shared_ptr<const Prox> f, g;  // post, pre, affine: f; chain: f then g
    L2 l2;
    UserProx user;

    bool has_grad() const;
    // An array (pre's b, affine's v, L2) somewhere: single arrays only, no stacks.
    bool single_only() const;

    // The operations on a list of members (one array, or a stack's members), each continuing
    // the caller's agreement ag on the arrays' base communicator (the caller checked tau > 0
    // and outs against xs, and folded their layouts) and running it exactly once before any
    // other communication. A list left empty by a failed check only joins (ag throws).
    // outs = prox_{tau f}(xs); outs may be xs.
    void apply(comm::Agreement &ag, const In &xs, double tau, const Out &outs) const;
    // f(xs), the same on every rank of the members' mask groups.
    double value(comm::Agreement &ag, const In &xs) const;
    // outs = prox_{tau f*}(xs) (pyproximal's proxdual: explicit for L1 on real data and L21,
    // else the Moreau identity xs - tau prox_{f / tau}(xs / tau)); outs may be xs.
    void dual(comm::Agreement &ag, const In &xs, double tau, const Out &outs) const;
    // outs = grad f(xs) (outs must not be xs). sigmame > 0: pyproximal's ProxOperator.grad,
    // operators without a gradient giving their Moreau envelope's, (x - prox_{sigmame f}(x)) /
    // sigmame; sigmame <= 0: those fail with NOT_SUPPORTED.
    void grad(comm::Agreement &ag, const In &xs, const Out &outs, double sigmame) const;

    // The single-array and stack forms of the C API (plm_prox_apply, ..._stacked).
    void apply(comm::Agreement &ag, const DistributedArray &x, double tau, DistributedArray &out) const;
    double value(comm::Agreement &ag, const DistributedArray &x) const;
    void apply_stacked(comm::Agreement &ag, const StackedArray &x, double tau, StackedArray &out) const;
    double value_stacked(comm::Agreement &ag, const StackedArray &x) const;
    void grad(comm::Agreement &ag, const DistributedArray &x, DistributedArray &out) const;
};

// ProximalGradient (plm_solve_proximal_gradient). epsg: one value or niter values. With
// backtrack, pyproximal's line search from tau (beta, niterback); the last step is in tau_out.
struct ProxGrad {
    double tau = 0, eta = 1, tol = 0;
    std::vector<double> epsg;
    int64_t niter = 10;
    int accel = 0;  // a plm_accel_t value, checked here
    bool backtrack = false;
    double beta = 0.5;
    int64_t niterback = 100;
    double *tau_out = nullptr;
};
void proximal_gradient(comm::Agreement &ag, const Prox &f, const Prox &g, DistributedArray &x, const ProxGrad &o,
                       Info &info, const Monitor &mon);

// ADMML2 (plm_solve_admml2).
struct Admm {
    double tau = 0, inner_tol = 1e-4;
    int64_t niter = 10, inner_niter = 10;
    bool gfirst = false, use_z0 = false;
};
// ADMML2's z: one array on a plain A's range (any g), or a stack on a stacked vstack A's
// range (plm_solve_admml2_stacked: g L1, L0, Box or user, applied member by member).
struct AdmmZ {
    DistributedArray *array = nullptr;
    StackedArray *stack = nullptr;
};
void admml2(comm::Agreement &ag, const Prox &g, const ops::Operator::Ptr &op, const DistributedArray &b,
            const ops::Operator::Ptr &A, DistributedArray &x, const AdmmZ &z, const Admm &o, Info &info,
            const Monitor &mon);

// PrimalDual (plm_solve_primal_dual): pyproximal's Chambolle-Pock iterations. y: one array on
// a plain A's range, or a stack on a stacked A's range. tau, mu: one value or niter values.
struct PrimalDualOpts {
    std::vector<double> tau, mu;
    double theta = 1;
    int64_t niter = 10;
    bool gfirst = true, use_y0 = false;
};
void primal_dual(comm::Agreement &ag, const Prox &f, const Prox &g, const ops::Operator::Ptr &A,
                 DistributedArray &x, const AdmmZ &y, const DistributedArray *z, const PrimalDualOpts &o, Info &info,
                 const Monitor &mon);

// AdaptivePrimalDual (plm_solve_adaptive_primal_dual): pyproximal's adaptive steps. steps
// (may be null): taus, mus and alphas, niter + 1 each.
struct AdaptiveOpts {
    double tau = 0, mu = 0, alpha = 0.5, eta = 0.95, s = 1, delta = 1.5, tol = 1e-10;
    int64_t niter = 10;
    double *steps = nullptr;
};
void adaptive_primal_dual(comm::Agreement &ag, const Prox &f, const Prox &g, const ops::Operator::Ptr &A,
                          DistributedArray &x, const DistributedArray *z, const AdaptiveOpts &o, Info &info,
                          const Monitor &mon);

}  // namespace plm::solvers
