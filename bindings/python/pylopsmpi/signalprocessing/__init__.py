"""Signal-processing operators (PyLops-MPI's pylops_mpi.signalprocessing), one module per
operator as in PyLops-MPI, over the library's operators:

    MPINonStationaryConvolve1D        1D non-stationary convolution operator.
    MPIFFT2D                          Two-dimensional Fast-Fourier Transform
    MPIFFTND                          N-dimensional Fast-Fourier Transform
"""
from .NonStatConvolve1d import MPINonStationaryConvolve1D
from .FFT2D import MPIFFT2D
from .FFTND import MPIFFTND
from . import NonStatConvolve1d, FFT2D, FFTND

__all__ = ["MPINonStationaryConvolve1D", "MPIFFT2D", "MPIFFTND"]
