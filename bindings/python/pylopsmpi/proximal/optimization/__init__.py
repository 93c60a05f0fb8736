"""pylops_mpi.proximal.optimization: the proximal solvers (ProximalGradient, ADMML2)."""
from .primal import ProximalGradient, ADMML2

__all__ = ["ProximalGradient", "ADMML2"]
