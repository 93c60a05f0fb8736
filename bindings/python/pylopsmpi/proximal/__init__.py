"""Proximal operators and solvers on DistributedArrays (PyLops-MPI's pylops_mpi.proximal), over
the library's plm_prox_* and plm_solve_proximal_gradient / plm_solve_admml2.

- `L1(sigma)`, `L0(sigma)`, `Box(lower, upper)`: pyproximal's separable operators applied to a
  whole DistributedArray (`f(x)` reduced over the ranks, `f.prox(x, tau)` a new array,
  `f.proxdual(x, tau)` by the Moreau identity). PyLops-MPI users take them from pyproximal and
  wrap them: `MPIProxOperator(prox)` accepts these or pyproximal's own L1 / L0 / Box objects
  (PyProximal itself is never imported).
- `MPIL2(Op, b, q, sigma, alpha, qgrad, niter, x0, warm, solver, kwargs_solver)`
  (pylops_mpi.proximal.proximal.L2), with `grad`; `MPIL21(ndim, sigma)` (.L21), the L2,1 norm
  of a StackedDistributedArray of ndim members.
- pyproximal's ProxOperator API on all of them: `proxdual`, `grad` (the Moreau envelope's where
  f has none), `postcomposition` (`sigma * f`), `precomposition(a, b)`, `affine_addition(v)`
  (`f + v`, `f - v`), `chain(g)` (`g * f`) and `.H`.
- `ProximalGradient` (with pyproximal's backtracking when tau is None), `ADMML2`
  (pylops_mpi.proximal.optimization.primal), `PrimalDual`, `AdaptivePrimalDual`
  (.primaldual; pyproximal's signatures).
L0's prox is pyproximal's (zero where |x| <= tau sigma).
"""
from ._prox import L1, L0, Box, MPIProxOperator, MPIL2, MPIL21
from ._primal import ProximalGradient, ADMML2
from ._primaldual import PrimalDual, AdaptivePrimalDual
from . import ProxOperator, proximal, optimization  # noqa: F401 - PyLops-MPI's module paths

__all__ = ["L1", "L0", "Box", "MPIProxOperator", "MPIL2", "MPIL21", "ProximalGradient", "ADMML2",
           "PrimalDual", "AdaptivePrimalDual"]
