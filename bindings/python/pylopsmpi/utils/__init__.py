"""Utilities (PyLops-MPI's pylops_mpi.utils): `dottest`."""
from .dottest import dottest

__all__ = ["dottest"]
