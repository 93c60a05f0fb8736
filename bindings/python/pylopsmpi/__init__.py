"""pylopsmpi: PyLops-MPI's API over the pylopsmpi C library.

Change one import line (``import pylopsmpi as pylops_mpi``) in a PyLops-MPI script. The low-level
layer (`pylopsmpi.lib`, `pylopsmpi.ffi`) is cffi, generated from the library's API description.
See docs/getting-started-python.md for the differences from PyLops-MPI.
"""
from . import _load  # noqa: F401  (the C library, before the cffi module that links it)
from ._plm import ffi, lib
from .errors import (PylopsMPIError, InvalidArgumentError, SizeMismatchError, DtypeMismatchError,
                     NotSupportedError, OutOfMemoryError, NotConvergedError, CommunicationError,
                     InternalError, CallbackError)
from ._core import check
from .DistributedArray import Partition, local_split, DistributedArray, StackedDistributedArray


def version():
    """(major, minor, patch) of the loaded C library."""
    v = ffi.new("int[3]")
    check(lib.plm_version(v, v + 1, v + 2))
    return (v[0], v[1], v[2])
from .LinearOperator import MPILinearOperator, MPIShellOperator, asmpilinearoperator
from .StackedLinearOperator import MPIStackedLinearOperator
from .basicoperators import (MPIBlockDiag, MPIStackedBlockDiag, MPIVStack, MPIStackedVStack,
                             MPIHStack, MPIFirstDerivative, MPISecondDerivative, MPILaplacian,
                             MPIGradient, MPIHalo, MPIMatrixMult)
from . import (optimization, utils, basicoperators, proximal, signalprocessing, waveeqprocessing,
               plotting)
from .plotting import plot_distributed_array, plot_local_arrays
from .proximal import MPIProxOperator
from .optimization import CG, CGLS, ISTA, FISTA, cg, cgls, ista, fista, power_iteration
from .utils import dottest

__version__ = "%d.%d.%d" % version()   # the C library's version (PyLops-MPI: its package's)
