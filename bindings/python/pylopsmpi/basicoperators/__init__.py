"""Basic operators (PyLops-MPI's pylops_mpi.basicoperators), one module per operator as in
PyLops-MPI (BlockDiag, VStack, HStack, FirstDerivative, SecondDerivative, Laplacian, Gradient,
Halo, MatrixMult); the implementation is in `_basic`."""
from ._basic import (MPIBlockDiag, MPIStackedBlockDiag, MPIVStack, MPIStackedVStack, MPIHStack,
                     MPIFirstDerivative, MPISecondDerivative, MPILaplacian, MPIGradient, MPIHalo,
                     MPIMatrixMult)
from . import (BlockDiag, VStack, HStack, FirstDerivative, SecondDerivative, Laplacian, Gradient,
               Halo, MatrixMult)

__all__ = ["MPIMatrixMult", "MPIBlockDiag", "MPIStackedBlockDiag", "MPIVStack", "MPIStackedVStack",
           "MPIHStack", "MPIFirstDerivative", "MPISecondDerivative", "MPILaplacian", "MPIGradient",
           "MPIHalo"]
