"""pylops_mpi.proximal.optimization.primaldual: PrimalDual, AdaptivePrimalDual."""
from .._primaldual import PrimalDual, AdaptivePrimalDual

__all__ = ["PrimalDual", "AdaptivePrimalDual"]
