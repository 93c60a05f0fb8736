"""Signal-processing operators (PyLops-MPI's pylops_mpi.signalprocessing), one module per
operator as in PyLops-MPI, over the library's operators:

    MPIFredholm1                      Fredholm integral of the first kind.
    MPINonStationaryConvolve1D        1D non-stationary convolution operator.
    MPIFFT2D                          Two-dimensional Fast-Fourier Transform
    MPIFFTND                          N-dimensional Fast-Fourier Transform
"""
from .Fredholm1 import MPIFredholm1
from .NonStatConvolve1d import MPINonStationaryConvolve1D
from .FFT2D import MPIFFT2D
from .FFTND import MPIFFTND
from . import Fredholm1, NonStatConvolve1d, FFT2D, FFTND

__all__ = ["MPIFredholm1", "MPINonStationaryConvolve1D", "MPIFFT2D", "MPIFFTND"]
