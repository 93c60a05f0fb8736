#include "solvers/proximal.hpp"

#include <cmath>

#include "kernels/kernels.hpp"

namespace plm::solvers {

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
    ag.run();
    if (&out != &x) kernels::copy(out.exec(), out.dtype(), out.local_size(), x.data(), out.data());
    // pyproximal: L1 soft-thresholds by tau sigma, L0 hard-thresholds by tau sigma (zero where
    // |x| <= sqrt(2 tau sigma)), the kernels ISTA uses.
    const kernels::Threshold t = kind == Kind::l1 ? kernels::Threshold::soft : kernels::Threshold::hard;
    kernels::threshold(out.exec(), out.dtype(), t, tau * sigma, out.local_size(), out.data());
}

double Prox::value(comm::Agreement &ag, const DistributedArray &x) const
{
    ag.fold(static_cast<int64_t>(kind));
    ag.fold_double(sigma);
    // L1: sigma sum |x|; L0: the count of non-zeros, unscaled, as pyproximal's L0.__call__.
    if (kind == Kind::l1) return sigma * x.norm(ag, 1.0);
    return x.norm(ag, 0.0);
}

}  // namespace plm::solvers
