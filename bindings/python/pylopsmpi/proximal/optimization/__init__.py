"""pylops_mpi.proximal.optimization: the proximal solvers (ProximalGradient, ADMML2, PrimalDual,
AdaptivePrimalDual)."""
from .primal import ProximalGradient, ADMML2
from .primaldual import PrimalDual, AdaptivePrimalDual
from . import primal, primaldual  # noqa: F401 - PyLops-MPI's module paths

__all__ = ["ProximalGradient", "ADMML2", "PrimalDual", "AdaptivePrimalDual"]
