"""pylops_mpi.proximal.proximal.L2: MPIL2."""
from .._prox import MPIL2

__all__ = ["MPIL2"]
