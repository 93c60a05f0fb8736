"""pylops_mpi.optimization.cls_basic: CG, CGLS."""
from ._solvers import CG, CGLS

__all__ = ["CG", "CGLS"]
