"""pylops_mpi.optimization.eigs: power_iteration."""
from ._solvers import power_iteration

__all__ = ["power_iteration"]
