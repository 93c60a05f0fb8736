"""pylops_mpi.optimization.basic: cg, cgls."""
from ._solvers import cg, cgls

__all__ = ["cg", "cgls"]
