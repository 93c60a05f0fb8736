"""Utilities (PyLops-MPI's pylops_mpi.utils): `dottest`, `fftshift_nd`, `ifftshift_nd`."""
from .dottest import dottest
from .fft_helper import fftshift_nd, ifftshift_nd
from . import fft_helper

__all__ = ["dottest", "fftshift_nd", "ifftshift_nd"]
