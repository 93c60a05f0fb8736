"""The parameters of PyLops-MPI's FFT operators and the operator made from them
(plm_op_fftnd_plan with PLM_FFT_OUTPUT_AXIS0), with PyLops' nffts and the planner effort of
mpi4py-fft's keyword arguments (PyLops-MPI's **kwargs_fft).

PyLops-MPI hands out the C-order vector of `dimsd` split in whole rows of axis 0 (its `reshaped`
decorator redistributes to axis 0 and ravels). The library's FFT leaves its output there itself:
when axis 0 is transformed, a second all-to-all planned with the operator brings the output
back to rows of axis 0, with no allocation per apply. The C handle has the PyLops-MPI range
layout: composites, solvers and `.H` all see the same vectors as `Op @ x`.
"""
from enum import Enum
import numbers
import warnings

import numpy as np
from mpi4py import MPI

from .._core import ffi, lib, call, checks, agree, Handle, plm_comm, plm_dtype
from ..LinearOperator import MPILinearOperator

_AxisError = getattr(getattr(np, "exceptions", np), "AxisError")


class _FFTNorms(Enum):
    """PyLops' norms of its FFT operators (pylops.signalprocessing._baseffts._FFTNorms)."""
    ORTHO = 1
    NONE = 2
    ONE_OVER_N = 3


def _ints(v, name):
    """An int or a sequence of ints as a tuple (TypeError otherwise, as PyLops)."""
    a = np.atleast_1d(np.asarray(v))
    if a.ndim != 1 or not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"Wrong input type for `{name}`. Must be: {np.integer}, got {a.dtype}.")
    return tuple(int(i) for i in a)


def _per_axis(v, naxes, kind, name):
    """A value or a sequence of values, one per FFT axis (a single value is repeated)."""
    a = np.atleast_1d(np.asarray(v))
    if a.ndim != 1:
        raise ValueError(f"`{name}` must be a value or a 1-D sequence")
    if a.size == 1:
        a = np.repeat(a, naxes)
    if kind is bool:
        if a.dtype != bool:
            raise TypeError(f"Wrong input type for `{name}`. Must be: {bool}, got {a.dtype}.")
        return a
    if np.issubdtype(a.dtype, np.integer):
        a = a.astype(np.float64)
    if not np.issubdtype(a.dtype, np.floating):
        raise TypeError(f"Wrong input type for `{name}`. Must be: {np.floating}, got {a.dtype}.")
    return a


def _norm(norm):
    if norm == "none":
        return _FFTNorms.NONE
    if isinstance(norm, str) and norm.lower() == "1/n":
        return _FFTNorms.ONE_OVER_N
    if norm == "backward":
        raise ValueError('To use no scaling on the forward transform, use "none". Note that in '
                         'this case, the adjoint transform will *not* have a 1/n scaling.')
    if norm == "forward":
        raise ValueError('To use 1/n scaling on the forward transform, use "1/n". Note that in '
                         'this case, the adjoint transform will *also* have a 1/n scaling.')
    raise ValueError(f"`norm`={norm} is not one of 'none' or '1/n'")


def _complex_of(dtype):
    dt = np.dtype(dtype)
    plm_dtype(dt)       # TypeError for the dtypes the library has not
    return np.dtype(np.complex64) if dt in (np.float32, np.complex64) else np.dtype(np.complex128)


# mpi4py-fft's planner efforts (its fftw backend's planner_effort) and the library's
_EFFORTS = {"FFTW_ESTIMATE": "PLM_FFT_PLANNING_ESTIMATE", "FFTW_MEASURE": "PLM_FFT_PLANNING_MEASURE",
            "FFTW_PATIENT": "PLM_FFT_PLANNING_PATIENT", "FFTW_EXHAUSTIVE": "PLM_FFT_PLANNING_EXHAUSTIVE"}


def _planning(kwargs_fft):
    """The planning effort of PyLops-MPI's **kwargs_fft (mpi4py-fft's keywords): planner_effort
    ('FFTW_ESTIMATE', 'FFTW_MEASURE' - mpi4py-fft's default and the library's -, 'FFTW_PATIENT',
    'FFTW_EXHAUSTIVE'); keywords that choose nothing here (backend='fftw', threads=1,
    collapse, slab) are accepted, the others refused."""
    effort = "FFTW_MEASURE"
    for key, value in kwargs_fft.items():
        if key == "planner_effort":
            if value not in _EFFORTS:
                raise ValueError(f"planner_effort={value!r} is not one of {sorted(_EFFORTS)}")
            effort = value
        elif key == "backend" and value in ("fftw", "pyfftw"):
            pass
        elif key == "threads" and value == 1:
            pass
        elif key in ("collapse", "slab"):
            pass
        else:
            raise TypeError(f"unsupported FFT keyword {key}={value!r}: pylopsmpi's FFT takes "
                            "planner_effort (FFTW's planning effort) only")
    return getattr(lib, _EFFORTS[effort])


class _MPIBaseFFTND(MPILinearOperator):
    """N-dimensional FFT over plm_op_fftnd_plan, with PyLops-MPI's parameters and attributes
    (and PyLops' nffts)."""

    def __init__(self, dims, axes=None, sampling=1.0, norm="none", real=False,
                 ifftshift_before=False, fftshift_after=False, dtype="complex128",
                 base_comm=MPI.COMM_WORLD, nffts=None, **kwargs_fft):
        with checks() as c:
            p = _parameters(dims, axes, sampling, norm, real, ifftshift_before, fftshift_after,
                            dtype, nffts)
            planning = _planning(kwargs_fft)
        agree(base_comm, c)
        self._kwargs_fft = dict(kwargs_fft)
        fft = Handle("plm_op_t", "plm_op_destroy")
        call(lib.plm_op_fftnd_plan, plm_comm(base_comm), *p.c_args, lib.PLM_FFT_OUTPUT_AXIS0,
             planning, fft.ptr)
        ndim = len(p.dims)
        dimsd, out_axis = ffi.new("int64_t[]", ndim), ffi.new("int *")
        call(lib.plm_op_fft_range, fft.h, ndim, dimsd, out_axis)
        dimsd = tuple(dimsd[i] for i in range(ndim))
        for name in ("ndim", "axes", "naxes", "nffts", "sampling", "ifftshift_before",
                     "fftshift_after", "norm", "real", "rdtype", "cdtype", "clinear"):
            setattr(self, name, getattr(p, name))
        self.out_axis = int(out_axis[0])  # 0: whole rows of axis 0, PyLops-MPI's output (see the module)
        self.fs = tuple(_frequencies(fft, i, dimsd[a]) for i, a in enumerate(self.axes))
        if self.real and self.fftshift_after[-1]:
            warnings.warn(
                "Using real=True and fftshift_after on the last direction. fftshift should only "
                "be applied on directions with negative and positive frequencies. When using "
                "FFTND with real=True, are all directions except the last. If you wish to proceed "
                "applying fftshift on a frequency axis with only positive frequencies, ignore "
                "this message.", stacklevel=3)
        n = float(np.prod(self.nffts))
        self._scale = n if self.norm is _FFTNorms.NONE else 1.0 / n
        MPILinearOperator._native(fft, base_comm, p.dims, dimsd, obj=self)

    def __truediv__(self, y):
        """The inverse transform: the adjoint divided by the forward's scale (PyLops-MPI's)."""
        out = self.rmatvec(y)
        out.local_array[...] /= self._scale
        return out


class _Parameters:
    pass


def _parameters(dims, axes, sampling, norm, real, ifftshift_before, fftshift_after, dtype,
                nffts=None):
    """PyLops-MPI's checks and conversions of the FFT parameters (nffts as PyLops': one value
    or one per axis, None for an axis' own length), and plm_op_fftnd_plan's arguments."""
    p = _Parameters()
    p.dims = _ints(dims, "dims")
    p.ndim = len(p.dims)
    ax = _ints(axes, "axes")
    for a in ax:
        if not -p.ndim <= a < p.ndim:
            raise _AxisError(f"axis {a} is out of bounds for array of dimension {p.ndim}")
    p.axes = np.array([a % p.ndim for a in ax])
    p.naxes = len(p.axes)
    if p.naxes != len(np.unique(p.axes)):
        # PyLops-MPI warns and transforms twice; the library refuses
        raise ValueError("At least one direction is repeated: pylopsmpi's FFT needs distinct axes")
    p.nffts = _nffts(nffts, p)
    p.sampling = _per_axis(sampling, p.naxes, float, "sampling")
    p.ifftshift_before = _per_axis(ifftshift_before, p.naxes, bool, "ifftshift_before")
    p.fftshift_after = _per_axis(fftshift_after, p.naxes, bool, "fftshift_after")
    if not p.naxes == len(p.sampling) == len(p.ifftshift_before) == len(p.fftshift_after):
        raise ValueError(
            "`axes`, `sampling`, `ifftshift_before` and `fftshift_after` must have the same "
            f"number of elements. Received {p.naxes}, {len(p.sampling)}, "
            f"{len(p.ifftshift_before)} and {len(p.fftshift_after)}, respectively.")
    p.norm = _norm(norm)
    p.real = bool(real)
    p.cdtype = _complex_of(dtype)
    p.rdtype = np.dtype(p.cdtype.char.lower()) if p.real else np.dtype(dtype)
    p.clinear = not (p.real or np.issubdtype(np.dtype(dtype), np.floating))

    def ints(v):
        return ffi.new("int[]", [int(b) for b in v])
    p.c_args = (plm_dtype(dtype), p.ndim, ffi.new("int64_t[]", list(p.dims)), p.naxes,
                ints(p.axes), ffi.new("int64_t[]", list(p.nffts)),
                ffi.new("double[]", [float(s) for s in p.sampling]),
                lib.PLM_FFT_NORM_NONE if p.norm is _FFTNorms.NONE else lib.PLM_FFT_NORM_1_N,
                int(p.real), ints(p.ifftshift_before), ints(p.fftshift_after))
    return p


def _nffts(nffts, p):
    """PyLops' nffts: None (every axis' length), one value for every axis, or one per axis
    (None for an axis' own length); >= 1 integers."""
    if nffts is None:
        return tuple(p.dims[d] for d in p.axes)
    v = [nffts] * p.naxes if np.ndim(nffts) == 0 else list(nffts)
    if len(v) != p.naxes:
        raise ValueError(f"`axes` and `nffts` must have the same number of elements. Received "
                         f"{p.naxes} and {len(v)}, respectively.")
    out = []
    for d, n in zip(p.axes, v):
        if n is None:
            out.append(p.dims[d])
            continue
        if not isinstance(n, (numbers.Integral, np.integer)):
            raise TypeError(f"Wrong input type for `nffts`. Must be: {np.integer}, got {type(n)}.")
        if n < 1:
            raise ValueError(f"nffts must be >= 1 (got {n})")
        out.append(int(n))
    short = [d for d, n in zip(p.axes, out) if n < p.dims[d]]
    if short:
        warnings.warn(f"nffts in directions {short} have been selected to be smaller than the size "
                      "of the original signal. This is rarely intended behavior as the original "
                      "signal will be truncated prior to applying fft, if this is the required "
                      "behaviour ignore this message.", stacklevel=5)
    return tuple(out)


def _frequencies(fft, i, n):
    """The frequencies of FFT axis i (n of them) from the library's operator."""
    f = np.empty(int(n))
    call(lib.plm_op_fft_frequencies, fft.h, i, int(n),
         ffi.cast("double *", ffi.from_buffer(f)) if n else ffi.NULL)
    return f


def fft_wisdom_export(base_comm=MPI.COMM_WORLD):
    """FFTW's wisdom (what measuring planners learnt, both precisions) as a str: every rank's
    merged, the same text on every rank (plm_fft_wisdom_export). Collective."""
    n = ffi.new("int64_t *")
    call(lib.plm_fft_wisdom_export, plm_comm(base_comm), ffi.NULL, 0, n)
    buf = ffi.new("char[]", n[0] + 1)
    call(lib.plm_fft_wisdom_export, plm_comm(base_comm), buf, n[0] + 1, n)
    return ffi.string(buf, n[0]).decode("ascii")


def fft_wisdom_import(wisdom, base_comm=MPI.COMM_WORLD):
    """Imports FFTW wisdom text (fft_wisdom_export's, or FFTW's / pyFFTW's export): rank 0's
    is used on every rank (others may pass None or the same text). Collective."""
    with checks() as c:
        if wisdom is not None and not isinstance(wisdom, (str, bytes)):
            raise TypeError(f"wisdom must be a str, bytes or None, got {type(wisdom).__name__}")
    agree(base_comm, c)
    text = ffi.NULL if wisdom is None else ffi.new(
        "char[]", wisdom.encode("ascii") if isinstance(wisdom, str) else bytes(wisdom))
    call(lib.plm_fft_wisdom_import, plm_comm(base_comm), text)
