"""Solvers (PyLops-MPI's pylops_mpi.optimization): the functions in `basic` (cg, cgls) and
`sparsity` (ista, fista), the classes in `cls_basic` (CG, CGLS) and `cls_sparsity` (ISTA, FISTA),
and `eigs.power_iteration`. The implementation is in `_solvers`."""
from ._solvers import CG, CGLS, ISTA, FISTA, cg, cgls, ista, fista, power_iteration
from . import basic, cls_basic, sparsity, cls_sparsity, eigs

__all__ = ["CG", "CGLS", "ISTA", "FISTA", "cg", "cgls", "ista", "fista", "power_iteration"]
