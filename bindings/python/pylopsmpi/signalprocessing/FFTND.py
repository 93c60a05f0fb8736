"""pylops_mpi.signalprocessing.FFTND: MPIFFTND."""
from mpi4py import MPI

from ._baseffts import _MPIBaseFFTND

__all__ = ["MPIFFTND"]


class MPIFFTND(_MPIBaseFFTND):
    r"""N-dimensional Fast-Fourier Transform (PyLops-MPI's MPIFFTND) over the library's
    distributed FFT (plm_op_fftnd: FFTW plans and one all-to-all, no mpi4py-fft).

    Parameters, attributes and results as PyLops-MPI's: ``dims``, ``axes``, ``sampling`` (one
    value or one per axis), ``norm`` ("none": unscaled forward, exact adjoint; "1/n": both
    scaled by 1/N, N the product of the FFT lengths), ``real`` (r2c along the last of
    ``axes``, bins ``[1, 1 + (n - 1) // 2)`` times sqrt(2); the adjoint returns real values),
    ``ifftshift_before`` / ``fftshift_after`` (one flag or one per axis), ``dtype`` (a real
    dtype keeps the real part of the input; the operator's dtype is always the complex one:
    complex64 for float32 / complex64, computed in single precision), ``base_comm``.
    Attributes ``dims``, ``dimsd`` (``dims`` with ``n // 2 + 1`` bins along the last axis when
    ``real``), ``fs`` (the frequencies along each of ``axes``: ``numpy.fft.fftfreq``, or
    ``rfftfreq`` for the last axis when ``real``, fftshift-ed where ``fftshift_after``),
    ``nffts``, ``axes``, ``real``, ``rdtype``, ``cdtype``, ``clinear``. ``Op / y`` is the
    inverse transform (the adjoint divided by the forward's scale).

    Distribution. The model is the C-order vector of ``dims`` in whole rows of axis 0 (any 1-D
    SCATTER vector of that size is accepted and re-split). The data ``Op @ x`` is the C-order
    vector of ``dimsd`` in whole rows of axis 0 with the default split, as in PyLops-MPI.
    When axis 0 is not among ``axes`` nothing is communicated; otherwise the transform moves
    the data to a split along another axis for the FFT along axis 0 and back to whole rows of
    axis 0 (two all-to-alls per apply, planned once; PyLops-MPI's ``reshaped`` does the second
    after mpi4py-fft). ``out_axis`` is 0.

    Past PyLops-MPI: ``nffts`` (PyLops' FFTND: one value, or one per axis, ``None`` for an
    axis' own length) crops or zero-pads the input along each axis before its transform, and
    the adjoint crops or pads back (the frequencies, ``dimsd`` and the "1/n" norm use
    ``nffts``); a 1-D ``dims`` is transformed by a distributed 1-D algorithm. ``**kwargs_fft``
    takes mpi4py-fft's ``planner_effort`` ('FFTW_ESTIMATE', 'FFTW_MEASURE' - the default, as
    mpi4py-fft's -, 'FFTW_PATIENT', 'FFTW_EXHAUSTIVE'), agreed over the ranks; see
    ``fft_wisdom_export`` / ``fft_wisdom_import`` to keep what measuring learnt.

    Differences from PyLops-MPI: repeated ``axes`` raise ValueError (PyLops-MPI warns and
    transforms twice).
    """

    def __init__(self, dims, axes=(0, 1, 2), sampling=1.0, norm="none", real=False,
                 ifftshift_before=False, fftshift_after=False, dtype="complex128",
                 base_comm=MPI.COMM_WORLD, nffts=None, **kwargs_fft):
        super().__init__(dims=dims, axes=axes, sampling=sampling, norm=norm, real=real,
                         ifftshift_before=ifftshift_before, fftshift_after=fftshift_after,
                         dtype=dtype, base_comm=base_comm, nffts=nffts, **kwargs_fft)
