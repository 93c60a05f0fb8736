// Proximal operators on distributed arrays (pyproximal's L1, L0 and Box as PyLops-MPI's
// MPIProxOperator wraps them, PyLops-MPI's MPIL2, and user callbacks on local data) and the
// proximal solvers (ProximalGradient, ADMML2).
//
// L1, L0, Box and user proxes are element-wise on each rank's local data; their values are
// one reduction over the array's mask group. L2 with an operator runs the operator and an
// inner CG / CGLS solve: its calls are a sequence of agreed collective steps (the apply, the
// inner solve's own agreement), each allocating inside its own agreement's check.
#pragma once

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

// User functions (plm_prox_create_callback).
struct UserProx {
    plm_prox_fn prox = nullptr;
    plm_prox_value_fn value = nullptr;
    plm_prox_grad_fn grad = nullptr;
    void *ctx = nullptr;
    void (*destroy)(void *) = nullptr;
};

struct Prox {
    enum class Kind { l1, l0, box, l2, user };
    Kind kind = Kind::l1;
    double sigma = 1;
    double lower = 0, upper = 0;  // box
    L2 l2;
    UserProx user;

    bool has_grad() const { return kind == Kind::l2 || (kind == Kind::user && user.grad); }
    // out = prox_{tau f}(x); out may be x. Collective on x's communicator (continues ag).
    void apply(comm::Agreement &ag, const DistributedArray &x, double tau, DistributedArray &out) const;
    // f(x), the same on every rank of x's mask group. Collective (continues ag).
    double value(comm::Agreement &ag, const DistributedArray &x) const;
    // The same on a stack, member by member (PyLops-MPI's MPIProxOperator on a
    // StackedDistributedArray): L1, L0, Box and user only (L2 is NOT_SUPPORTED). The value
    // sums the members' values (Box: 1 when every member is inside). Collective on x's base
    // communicator (continues ag).
    void apply_stacked(comm::Agreement &ag, const StackedArray &x, double tau, StackedArray &out) const;
    double value_stacked(comm::Agreement &ag, const StackedArray &x) const;
    // out = grad f(x); out must not be x. Collective (continues ag).
    void grad(comm::Agreement &ag, const DistributedArray &x, DistributedArray &out) const;
};

// ProximalGradient (plm_solve_proximal_gradient). epsg: one value or niter values.
struct ProxGrad {
    double tau = 0, eta = 1, tol = 0;
    std::vector<double> epsg;
    int64_t niter = 10;
    int accel = 0;  // a plm_accel_t value, checked here
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

}  // namespace plm::solvers
