"""pylops_mpi.basicoperators.Halo: MPIHalo."""
from ._basic import MPIHalo

__all__ = ["MPIHalo"]
