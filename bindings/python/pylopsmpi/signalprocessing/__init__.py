"""Signal processing operators (PyLops-MPI's pylops_mpi.signalprocessing), one module per
operator as in PyLops-MPI."""
from .Fredholm1 import MPIFredholm1

__all__ = ["MPIFredholm1"]
