"""Basic operators (PyLops-MPI's pylops_mpi.basicoperators), one module per operator as in
PyLops-MPI (BlockDiag, VStack, HStack, FirstDerivative, SecondDerivative, Laplacian, Gradient,
Halo, MatrixMult); the implementation is in `_basic`. The grid helpers PyLops-MPI scripts import
from here: halo_block_split (Halo), active_grid_comm, local_block_split, block_gather
(MatrixMult)."""
from ._basic import (MPIBlockDiag, MPIStackedBlockDiag, MPIVStack, MPIStackedVStack, MPIHStack,
                     MPIFirstDerivative, MPISecondDerivative, MPILaplacian, MPIGradient, MPIHalo,
                     MPIMatrixMult)
from . import (BlockDiag, VStack, HStack, FirstDerivative, SecondDerivative, Laplacian, Gradient,
               Halo, MatrixMult)
from .Halo import halo_block_split
from .MatrixMult import active_grid_comm, local_block_split, block_gather

__all__ = ["MPIMatrixMult", "MPIBlockDiag", "MPIStackedBlockDiag", "MPIVStack", "MPIStackedVStack",
           "MPIHStack", "MPIFirstDerivative", "MPISecondDerivative", "MPILaplacian", "MPIGradient",
           "MPIHalo", "halo_block_split", "active_grid_comm", "local_block_split", "block_gather"]
