"""pylopsmpi.signalprocessing.FFT: MPIFFT, the 1-D FFT of PyLops' FFT on distributed arrays."""
from mpi4py import MPI

from .._core import checks, agree
from .FFTND import MPIFFTND

__all__ = ["MPIFFT"]


class MPIFFT(MPIFFTND):
    r"""One-dimensional Fast-Fourier Transform along one ``axis`` of a distributed array, with
    PyLops' FFT parameters (``dims``, ``axis=-1``, ``nfft``, ``sampling``, ``norm``, ``real``,
    ``ifftshift_before``, ``fftshift_after``, ``dtype``) and ``base_comm``; PyLops-MPI has no
    1-D FFT class, so this is MPIFFTND along ``axes=(axis,)`` with ``nffts=(nfft,)``.

    Along axis 0 of a 1-D array (``dims`` an int or a 1-tuple) the transform is distributed:
    a six-step algorithm (n = n1 n2, three all-to-alls and twiddle factors; a prime length runs
    on one rank). ``nfft`` crops or zero-pads the signal before the transform (the adjoint
    crops or pads back). Attributes as PyLops' FFT: ``nfft``, ``f`` (the frequencies),
    ``real``, ``rdtype``, ``cdtype``, ``clinear``, ``dims``, ``dimsd``. Distribution (model and
    data in whole rows of axis 0), ``**kwargs_fft`` (``planner_effort``) and norms ("none",
    "1/n"; PyLops' default "ortho" is not offered, as in PyLops-MPI): see MPIFFTND.
    """

    def __init__(self, dims, axis=-1, nfft=None, sampling=1.0, norm="none", real=False,
                 ifftshift_before=False, fftshift_after=False, dtype="complex128",
                 base_comm=MPI.COMM_WORLD, **kwargs_fft):
        with checks() as c:
            if not isinstance(axis, int) and not hasattr(axis, "__index__"):
                raise TypeError(f"axis must be an int, got {type(axis).__name__}")
            if nfft is not None and not isinstance(nfft, int) and not hasattr(nfft, "__index__"):
                raise TypeError(f"nfft must be an int or None, got {type(nfft).__name__}")
        agree(base_comm, c)
        super().__init__(dims=dims, axes=(axis,), sampling=sampling, norm=norm, real=real,
                         ifftshift_before=ifftshift_before, fftshift_after=fftshift_after,
                         dtype=dtype, base_comm=base_comm,
                         nffts=None if nfft is None else (int(nfft),), **kwargs_fft)
        self.axis = int(self.axes[0])
        self.nfft = int(self.nffts[0])
        self.f = self.fs[0]
