"""Utilities (PyLops-MPI's pylops_mpi.utils): `dottest`, `fftshift_nd`, `ifftshift_nd`, and the
timing tool `benchmark` / `mark` (utils.benchmark)."""
from .dottest import dottest
from .fft_helper import fftshift_nd, ifftshift_nd
from .benchmark import benchmark, mark
from . import fft_helper, deps  # noqa: F401
# as in PyLops-MPI, utils.benchmark names the decorator; the module stays importable as
# pylopsmpi.utils.benchmark (from pylopsmpi.utils.benchmark import benchmark, mark)

__all__ = ["dottest", "fftshift_nd", "ifftshift_nd", "benchmark", "mark"]
