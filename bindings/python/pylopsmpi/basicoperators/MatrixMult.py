"""pylops_mpi.basicoperators.MatrixMult: MPIMatrixMult."""
from ._basic import MPIMatrixMult

__all__ = ["MPIMatrixMult"]
