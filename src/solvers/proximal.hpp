// Proximal operators on distributed arrays (pyproximal's L1 and L0, as PyLops-MPI's
// MPIProxOperator wraps them): the prox is element-wise on each rank's local data; the value
// is one reduction over the array's mask group through the array's own norms.
#pragma once

#include "array/distributed_array.hpp"

namespace plm::solvers {

struct Prox {
    enum class Kind { l1, l0 };
    Kind kind = Kind::l1;
    double sigma = 1;

    // out = prox_{tau f}(x); out may be x. Collective on x's communicator (one agreement).
    void apply(comm::Agreement &ag, const DistributedArray &x, double tau, DistributedArray &out) const;
    // f(x), the same on every rank of x's mask group.
    double value(comm::Agreement &ag, const DistributedArray &x) const;
};

}  // namespace plm::solvers
