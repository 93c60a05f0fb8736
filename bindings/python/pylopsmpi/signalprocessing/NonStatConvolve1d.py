"""pylops_mpi.signalprocessing.NonStatConvolve1d: MPINonStationaryConvolve1D."""
import numpy as np
from mpi4py import MPI

from .._core import ffi, lib, checks, agree, Handle, call, plm_comm, plm_dtype
from ..LinearOperator import MPILinearOperator

__all__ = ["MPINonStationaryConvolve1D"]


def MPINonStationaryConvolve1D(dims, hs, ih, axis=-1, base_comm=MPI.COMM_WORLD, dtype="float64"):
    r"""1D non-stationary convolution operator (PyLops-MPI's MPINonStationaryConvolve1D) over
    the library's plm_op_nonstationary_convolve1d.

    The filters ``hs`` (``nfilt x nh``, ``nh`` odd, each centred on its middle tap) sit at the
    regularly spaced indices ``ih`` along ``axis``; sample i gets the filter linearly
    interpolated between the two positions around it (the first filter before ``ih[0]``, the
    last after ``ih[-1]``), as in PyLops' NonStationaryConvolve1D. The model and the data are
    the C-order vector of ``dims`` in whole rows of axis 0 (the default split; any 1-D SCATTER
    vector of that size is accepted and re-split); ``axis`` may be any axis.

    PyLops-MPI's limits are lifted: ``dims[axis]`` need not be divisible by the number of ranks,
    and a rank needs no filter position of its own (every rank keeps all the filters; thin and
    empty blocks work). The same ValueErrors otherwise: even filter length, irregular ``ih``,
    ``ih`` outside ``[0, dims[axis])`` (and ``hs.shape[0] != len(ih)``). For complex dtypes the
    adjoint is the exact adjoint (conjugated filters), where PyLops does not conjugate.
    Returns an MPILinearOperator of shape ``(prod(dims), prod(dims))``.
    """
    hd = Handle("plm_op_t", "plm_op_destroy")
    with checks() as c:
        dims_t = (int(dims),) if np.isscalar(dims) else tuple(int(d) for d in dims)
        hs_a = np.ascontiguousarray(np.asarray(hs), dtype=dtype)
        ih_a = np.asarray(ih).ravel()
        code = plm_dtype(hs_a.dtype)
        if hs_a.ndim != 2:
            raise ValueError(f"hs must be a 2-D array of filters, got {hs_a.ndim} dimensions")
        if hs_a.shape[1] % 2 == 0:
            raise ValueError("filters hs must have odd length")
        if hs_a.shape[0] != ih_a.size:
            raise ValueError(f"hs has {hs_a.shape[0]} filters but ih {ih_a.size} indices")
        if ih_a.size == 0 or not np.issubdtype(ih_a.dtype, np.integer):
            raise ValueError("the indices of filters 'ih' must be a non-empty sequence of ints")
        if len(np.unique(np.diff(ih_a))) > 1:
            raise ValueError("the indices of filters 'ih' are must be regularly sampled")
        if not -len(dims_t) <= axis < len(dims_t):
            raise ValueError(f"axis {axis} is out of bounds for dims {dims_t}")
        if min(ih_a) < 0 or max(ih_a) >= dims_t[axis]:
            raise ValueError("the indices of filters 'ih' must be larger than 0 and smaller "
                             "than `dims`")
        args = (code, len(dims_t), ffi.new("int64_t[]", list(dims_t)), -1, int(axis),
                int(hs_a.shape[0]), int(hs_a.shape[1]), ffi.from_buffer(hs_a), hs_a.nbytes,
                ffi.new("int64_t[]", [int(i) for i in ih_a]))
    agree(base_comm, c)
    call(lib.plm_op_nonstationary_convolve1d, plm_comm(base_comm), *args, hd.ptr)
    return MPILinearOperator._native(hd, base_comm, dims_t, dims_t)
