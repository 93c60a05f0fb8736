"""pylops_mpi.basicoperators.SecondDerivative: MPISecondDerivative."""
from ._basic import MPISecondDerivative

__all__ = ["MPISecondDerivative"]
