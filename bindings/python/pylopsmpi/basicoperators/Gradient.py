"""pylops_mpi.basicoperators.Gradient: MPIGradient."""
from ._basic import MPIGradient

__all__ = ["MPIGradient"]
