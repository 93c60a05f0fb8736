"""pylops_mpi.basicoperators.BlockDiag: MPIBlockDiag, MPIStackedBlockDiag."""
from ._basic import MPIBlockDiag, MPIStackedBlockDiag

__all__ = ["MPIBlockDiag", "MPIStackedBlockDiag"]
