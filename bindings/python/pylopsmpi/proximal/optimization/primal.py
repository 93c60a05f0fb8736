"""pylops_mpi.proximal.optimization.primal: ProximalGradient, ADMML2."""
from .._primal import ProximalGradient, ADMML2

__all__ = ["ProximalGradient", "ADMML2"]
