"""pylops_mpi.StackedLinearOperator: MPIStackedLinearOperator (defined with MPILinearOperator in
LinearOperator.py, whose composites make it)."""
from .LinearOperator import MPIStackedLinearOperator

__all__ = ["MPIStackedLinearOperator"]
