"""pylops_mpi.basicoperators.VStack: MPIVStack, MPIStackedVStack."""
from ._basic import MPIVStack, MPIStackedVStack

__all__ = ["MPIVStack", "MPIStackedVStack"]
