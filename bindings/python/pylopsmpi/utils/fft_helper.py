"""pylops_mpi.utils.fft_helper: fftshift_nd and ifftshift_nd on DistributedArrays, over the
library's plm_array_fftshift."""
import numpy as np

from .._core import ffi, lib, call, checks, agree, Handle

__all__ = ["fftshift_nd", "ifftshift_nd"]


def _shift(x, axes, inverse):
    with checks() as c:
        if axes is None:
            ax = None
        elif np.isscalar(axes):
            ax = [int(axes)]
        else:
            ax = [int(a) for a in axes]
    agree(x.base_comm, c)
    if ax is not None and not ax:
        return x                        # no axes: nothing to shift (naxes = 0 means all)
    out = Handle("plm_array_t", "plm_array_destroy")
    call(lib.plm_array_fftshift, x.handle, len(ax) if ax else 0,
         ffi.new("int[]", ax) if ax else ffi.NULL, int(inverse), out.ptr)
    try:
        call(lib.plm_array_copy, out.h, x.handle)
    finally:
        out.destroy()
    return x


def fftshift_nd(x, axes=None):
    """numpy.fft.fftshift of a DistributedArray along ``axes`` (every axis when None): a roll by
    ``n // 2``. Like PyLops-MPI's, x is modified in place and returned. Unlike PyLops-MPI's,
    the distribution stays (along the distributed axis the slices move between ranks in one
    all-to-all, where PyLops-MPI returns an array redistributed to another axis) and 1-D arrays
    work (PyLops-MPI needs ``ndim >= 2``). Collective: ``axes`` must agree on every rank."""
    return _shift(x, axes, 0)


def ifftshift_nd(x, axes=None):
    """numpy.fft.ifftshift of a DistributedArray along ``axes`` (every axis when None): a roll
    by ``-(n // 2)``, undoing fftshift_nd. In place, like fftshift_nd (see there)."""
    return _shift(x, axes, 1)
