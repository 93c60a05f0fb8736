"""Wave-equation operators (PyLops-MPI's pylops_mpi.waveeqprocessing), one module per operator
as in PyLops-MPI."""
from .MDC import MPIMDC

__all__ = ["MPIMDC"]
