"""pylops_mpi.basicoperators.FirstDerivative: MPIFirstDerivative."""
from ._basic import MPIFirstDerivative

__all__ = ["MPIFirstDerivative"]
