"""pylops_mpi.proximal.proximal: the non-separable proximal operators (MPIL2)."""
from .L2 import MPIL2

__all__ = ["MPIL2"]
