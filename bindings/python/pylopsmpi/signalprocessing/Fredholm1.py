"""MPIFredholm1 (PyLops-MPI's pylops_mpi.signalprocessing.Fredholm1) over plm_op_fredholm1."""
import operator

import numpy as np
from mpi4py import MPI

from .._core import ffi, lib, plm_dtype
from ..LinearOperator import MPILinearOperator
from ..basicoperators._basic import _new_agreed

__all__ = ["MPIFredholm1"]


def _kernel(G, dtype, what="G"):
    """G as a C-contiguous (n, rows, cols) array of `dtype`; a complex G given a real dtype keeps
    its real part (what PyLops-MPI's real-dtype output keeps of real inputs)."""
    g = np.asarray(G)
    if g.ndim != 3:
        raise ValueError(f"{what} must be 3-D (this rank's slices, rows, columns), got {g.ndim} "
                         "dimensions")
    dt = np.dtype(dtype)
    plm_dtype(dt)
    if np.iscomplexobj(g) and not np.issubdtype(dt, np.complexfloating):
        g = g.real
    return np.ascontiguousarray(g, dtype=dt)


def _buffer(g):
    """(pointer, bytes) of g for a C call that copies it; the cdata keeps g alive meanwhile."""
    return (ffi.from_buffer(g), g.nbytes) if g.nbytes else (ffi.NULL, 0)


class MPIFredholm1(MPILinearOperator):
    """Fredholm integral of the first kind, G split over the ranks along its first axis.

    G is this rank's slices, (nsl, nx, ny); any count per rank works, 0 and 1 included
    (PyLops-MPI refuses a rank with one slice). Model (nsl_tot, ny, nz) and data
    (nsl_tot, nx, nz) are BROADCAST arrays. The library copies G (twice with saveGt: G and G^H);
    `usematmul` is accepted as in PyLops-MPI, both choices compute one gemm per slice.
    """

    def __init__(self, G, nz=1, saveGt=False, usematmul=True, base_comm=MPI.COMM_WORLD,
                 dtype="float64"):
        kept = []

        def args():
            n = operator.index(nz)
            g = _kernel(G, dtype)
            kept.append(g)
            nsl, nx, ny = g.shape
            return (plm_dtype(g.dtype), nsl, nx, ny, n) + _buffer(g) + \
                (int(bool(saveGt)), int(bool(usematmul)))
        hd = _new_agreed(lib.plm_op_fredholm1, base_comm, args)
        self.G = G
        self.nz = operator.index(nz)
        self.nsl, self.nx, self.ny = kept[0].shape
        self.nsls = base_comm.allgather(self.nsl)
        self.islstart = np.insert(np.cumsum(self.nsls)[:-1], 0, 0)
        self.islend = np.cumsum(self.nsls)
        self.saveGt, self.usematmul = bool(saveGt), bool(usematmul)
        total = int(self.islend[-1])
        MPILinearOperator._native(hd, base_comm, (total, self.ny, self.nz),
                                  (total, self.nx, self.nz), obj=self)
