"""pylops_mpi.basicoperators.Laplacian: MPILaplacian."""
from ._basic import MPILaplacian

__all__ = ["MPILaplacian"]
