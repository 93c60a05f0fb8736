"""pylops_mpi.optimization.sparsity: ista, fista."""
from ._solvers import ista, fista

__all__ = ["ista", "fista"]
