"""pylops_mpi.proximal.proximal: the non-separable proximal operators (MPIL2, MPIL21)."""
from .L2 import MPIL2
from .L21 import MPIL21

__all__ = ["MPIL2", "MPIL21"]
