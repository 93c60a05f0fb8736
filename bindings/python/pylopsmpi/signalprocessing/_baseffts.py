"""The parameters of PyLops-MPI's FFT operators and the operator made from them (plm_op_fftnd).

The library's FFT ends with its output split along one axis (`out_axis`, plm_op_fft_range) as a
1-D vector of C-order blocks in rank order. PyLops-MPI hands out the C-order vector of `dimsd`
split in whole rows of axis 0 (its `reshaped` decorator redistributes to axis 0 and ravels), so
when out_axis is not 0 the operator made here is R F, R a shell operator doing that
redistribution (one more all-to-all per apply, as in PyLops-MPI). The C handle then has the
PyLops-MPI range layout: composites, solvers and `.H` all see the same vectors as `Op @ x`.
"""
from enum import Enum
import warnings

import numpy as np
from mpi4py import MPI

from .._core import ffi, lib, call, checks, agree, Handle, plm_comm, plm_dtype
from ..DistributedArray import DistributedArray
from ..LinearOperator import MPILinearOperator, MPIShellOperator

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


def _split(n, size):
    """The default split of n over size ranks (PyLops-MPI's local_split)."""
    return [n // size + (1 if r < n % size else 0) for r in range(size)]


class _BlocksToRows(MPIShellOperator):
    """The FFT's output (blocks of dimsd split along out_axis, in rank order) to PyLops-MPI's
    (C order of dimsd, whole rows of axis 0), and back in the adjoint: a permutation."""

    def __init__(self, dimsd, out_axis, dtype, base_comm):
        size, n = base_comm.Get_size(), int(np.prod(dimsd))
        per_block_row = n // max(dimsd[out_axis], 1)      # elements per slice along out_axis
        per_row = n // max(dimsd[0], 1)
        self._blocks = DistributedArray(dimsd, base_comm=base_comm, axis=out_axis, dtype=dtype)
        self._rows = DistributedArray(dimsd, base_comm=base_comm, axis=0, dtype=dtype)
        self._out_axis = out_axis
        domain = DistributedArray(n, base_comm=base_comm, dtype=dtype,
                                  local_shapes=[(b * per_block_row,)
                                                for b in _split(dimsd[out_axis], size)])
        range_ = DistributedArray(n, base_comm=base_comm, dtype=dtype,
                                  local_shapes=[(r * per_row,) for r in _split(dimsd[0], size)])
        super().__init__(dtype=dtype, base_comm=base_comm, domain=domain, range=range_)

    def _matvec(self, x):
        a = DistributedArray._like(self._blocks,
                                   local_array=x.local_array.reshape(self._blocks.local_shape))
        return a.redistribute(0)

    def _rmatvec(self, y):
        a = DistributedArray._like(self._rows,
                                   local_array=y.local_array.reshape(self._rows.local_shape))
        return a.redistribute(self._out_axis)


class _MPIBaseFFTND(MPILinearOperator):
    """N-dimensional FFT over plm_op_fftnd, with PyLops-MPI's parameters and attributes."""

    def __init__(self, dims, axes=None, sampling=1.0, norm="none", real=False,
                 ifftshift_before=False, fftshift_after=False, dtype="complex128",
                 base_comm=MPI.COMM_WORLD):
        with checks() as c:
            p = _parameters(dims, axes, sampling, norm, real, ifftshift_before, fftshift_after,
                            dtype)
        agree(base_comm, c)
        fft = Handle("plm_op_t", "plm_op_destroy")
        call(lib.plm_op_fftnd, plm_comm(base_comm), *p.c_args, fft.ptr)
        ndim = len(p.dims)
        dimsd, out_axis = ffi.new("int64_t[]", ndim), ffi.new("int *")
        call(lib.plm_op_fft_range, fft.h, ndim, dimsd, out_axis)
        dimsd = tuple(dimsd[i] for i in range(ndim))
        for name in ("ndim", "axes", "naxes", "nffts", "sampling", "ifftshift_before",
                     "fftshift_after", "norm", "real", "rdtype", "cdtype", "clinear"):
            setattr(self, name, getattr(p, name))
        # the axis the transform leaves its output split along, before the redistribution to
        # whole rows of axis 0 that gives PyLops-MPI's output vector (see the module)
        self.out_axis = int(out_axis[0])
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
        hd = _to_rows(fft, dimsd, self.out_axis, self.cdtype, base_comm)
        MPILinearOperator._native(hd, base_comm, p.dims, dimsd, obj=self)

    def __truediv__(self, y):
        """The inverse transform: the adjoint divided by the forward's scale (PyLops-MPI's)."""
        out = self.rmatvec(y)
        out.local_array[...] /= self._scale
        return out


class _Parameters:
    pass


def _parameters(dims, axes, sampling, norm, real, ifftshift_before, fftshift_after, dtype):
    """PyLops-MPI's checks and conversions of the FFT parameters, and plm_op_fftnd's arguments."""
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
    p.nffts = tuple(p.dims[d] for d in p.axes)
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
                ints(p.axes), ffi.new("double[]", [float(s) for s in p.sampling]),
                lib.PLM_FFT_NORM_NONE if p.norm is _FFTNorms.NONE else lib.PLM_FFT_NORM_1_N,
                int(p.real), ints(p.ifftshift_before), ints(p.fftshift_after))
    return p


def _frequencies(fft, i, n):
    """The frequencies of FFT axis i (n of them) from the library's operator."""
    f = np.empty(int(n))
    call(lib.plm_op_fft_frequencies, fft.h, i, int(n),
         ffi.cast("double *", ffi.from_buffer(f)) if n else ffi.NULL)
    return f


def _to_rows(fft, dimsd, out_axis, dtype, base_comm):
    """fft itself when its output is split along axis 0, else R fft (see the module)."""
    if out_axis == 0:
        return fft
    r = _BlocksToRows(dimsd, out_axis, dtype, base_comm)
    hd = Handle("plm_op_t", "plm_op_destroy")
    try:
        call(lib.plm_op_product, r.handle, fft.h, hd.ptr)
    finally:
        # the product holds both; dropping R's own handle ends the cycle R -> C op -> ctx -> R
        r.destroy()
        fft.destroy()
    return hd
