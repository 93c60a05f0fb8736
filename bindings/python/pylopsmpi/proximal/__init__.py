"""Proximal operators and solvers on DistributedArrays (PyLops-MPI's pylops_mpi.proximal), over
the library's plm_prox_* and plm_solve_proximal_gradient / plm_solve_admml2.

- `L1(sigma)`, `L0(sigma)`, `Box(lower, upper)`: pyproximal's separable operators applied to a
  whole DistributedArray (`f(x)` reduced over the ranks, `f.prox(x, tau)` a new array,
  `f.proxdual(x, tau)` by the Moreau identity). PyLops-MPI users take them from pyproximal and
  wrap them: `MPIProxOperator(prox)` accepts these or pyproximal's own L1 / L0 / Box objects
  (PyProximal itself is never imported).
- `MPIL2(Op, b, q, sigma, alpha, qgrad, niter, x0, warm, solver, kwargs_solver)`
  (pylops_mpi.proximal.proximal.L2), with `grad`.
- `ProximalGradient`, `ADMML2` (pylops_mpi.proximal.optimization.primal; PyLops-MPI users may
  also know them from pyproximal.optimization.primal).
"""
from ._prox import L1, L0, Box, MPIProxOperator, MPIL2
from ._primal import ProximalGradient, ADMML2
from . import ProxOperator, proximal, optimization  # noqa: F401 - PyLops-MPI's module paths

__all__ = ["L1", "L0", "Box", "MPIProxOperator", "MPIL2", "ProximalGradient", "ADMML2"]
