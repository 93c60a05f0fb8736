"""Signal-processing operators (PyLops-MPI's pylops_mpi.signalprocessing), one module per
operator as in PyLops-MPI, over the library's operators:

    MPIFredholm1                      Fredholm integral of the first kind.
    MPINonStationaryConvolve1D        1D non-stationary convolution operator.
    MPIFFT                            One-dimensional Fast-Fourier Transform (PyLops' FFT)
    MPIFFT2D                          Two-dimensional Fast-Fourier Transform
    MPIFFTND                          N-dimensional Fast-Fourier Transform
    fft_wisdom_export / fft_wisdom_import   FFTW's wisdom, agreed over the ranks
"""
from .Fredholm1 import MPIFredholm1
from .NonStatConvolve1d import MPINonStationaryConvolve1D
from .FFT2D import MPIFFT2D
from .FFTND import MPIFFTND
from .FFT import MPIFFT
from ._baseffts import fft_wisdom_export, fft_wisdom_import
from . import Fredholm1, NonStatConvolve1d, FFT, FFT2D, FFTND

__all__ = ["MPIFredholm1", "MPINonStationaryConvolve1D", "MPIFFT", "MPIFFT2D", "MPIFFTND",
           "fft_wisdom_export", "fft_wisdom_import"]
