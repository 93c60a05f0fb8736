"""pylops_mpi.basicoperators.HStack: MPIHStack."""
from ._basic import MPIHStack

__all__ = ["MPIHStack"]
