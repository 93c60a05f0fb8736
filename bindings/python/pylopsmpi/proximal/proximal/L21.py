"""pylops_mpi.proximal.proximal.L21: MPIL21."""
from .._prox import MPIL21

__all__ = ["MPIL21"]
