"""pylops_mpi.optimization.cls_sparsity: ISTA, FISTA."""
from ._solvers import ISTA, FISTA

__all__ = ["ISTA", "FISTA"]
