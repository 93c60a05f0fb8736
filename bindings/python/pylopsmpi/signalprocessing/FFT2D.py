"""pylops_mpi.signalprocessing.FFT2D: MPIFFT2D."""
from mpi4py import MPI

from .._core import checks, agree
from .FFTND import MPIFFTND

__all__ = ["MPIFFT2D"]


class MPIFFT2D(MPIFFTND):
    r"""Two-dimensional Fast-Fourier Transform (PyLops-MPI's MPIFFT2D): MPIFFTND along exactly
    two ``axes`` of an array of at least two dimensions (ValueError otherwise), with the
    frequencies as ``f1`` and ``f2`` (no ``fs``). The default ``axes`` are PyLops-MPI's,
    ``(0, 1)`` (PyLops' serial FFT2D has ``(-2, -1)``). Distribution, conventions, ``nffts``,
    ``**kwargs_fft`` and differences: see MPIFFTND.
    """

    def __init__(self, dims, axes=(0, 1), sampling=1.0, norm="none", real=False,
                 ifftshift_before=False, fftshift_after=False, dtype="complex128",
                 base_comm=MPI.COMM_WORLD, nffts=None, **kwargs_fft):
        with checks() as c:
            if len(dims) < 2:
                raise ValueError("FFT2D requires at least two input dimensions")
            if len(axes) != 2:
                raise ValueError("FFT2D must be applied along exactly two dimensions")
        agree(base_comm, c)
        super().__init__(dims=dims, axes=axes, sampling=sampling, norm=norm, real=real,
                         ifftshift_before=ifftshift_before, fftshift_after=fftshift_after,
                         dtype=dtype, base_comm=base_comm, nffts=nffts, **kwargs_fft)
        self.f1, self.f2 = self.fs
        del self.fs
