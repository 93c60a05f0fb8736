"""MPIMDC (PyLops-MPI's pylops_mpi.waveeqprocessing.MDC) over plm_op_mdc."""
import logging
import operator

import numpy as np
from mpi4py import MPI

from .._core import lib, plm_dtype
from ..LinearOperator import MPILinearOperator
from ..basicoperators._basic import _new_agreed
from ..signalprocessing.Fredholm1 import _kernel, _buffer

__all__ = ["MPIMDC"]

_ENGINES = ("numpy", "fftw", "scipy", "mkl_fft")


def MPIMDC(G, nt, nv, nfreq, dt=1.0, dr=1.0, twosided=True, fftengine="numpy", saveGt=True,
           conj=False, usematmul=False, prescaled=False, base_comm=MPI.COMM_WORLD):
    """Multi-dimensional convolution, G (frequency domain) split over the ranks along its first
    (frequency) axis: this rank's (nf, ns, nr) frequencies, the ranks' counts summing to
    min(nfreq, nt // 2 + 1). Model (nt, nr, nv) and data (nt, ns, nv) are real BROADCAST
    arrays (float32 for a complex64 G, float64 otherwise); a real G is taken as complex. The
    library copies G and computes the time FFTs with FFTW whatever `fftengine` names
    (PyLops' engine names are accepted); `usematmul` is accepted as in PyLops-MPI.
    """
    kept = []

    def args():
        n_t, n_v, n_f = (operator.index(v) for v in (nt, nv, nfreq))
        if fftengine not in _ENGINES:
            raise NotImplementedError("engine must be numpy, fftw, scipy or mkl_fft")
        if twosided and n_t % 2 == 0:
            raise ValueError("nt must be odd number")
        g = np.asarray(G)
        g = _kernel(g, np.result_type(g.dtype, np.complex64))
        nfft = int(np.ceil((n_t + 1) / 2))
        if n_f > nfft:
            n_f = nfft
            logging.warning("nfmax set equal to ceil[(nt+1)/2=%d]" % n_f)
        kept.append(g)
        nf, ns, nr = g.shape
        return (plm_dtype(g.dtype), n_t, n_v, n_f, nf, ns, nr, float(dt), float(dr),
                int(bool(twosided)), int(bool(conj)), int(bool(prescaled)), int(bool(saveGt))) \
            + _buffer(g)
    hd = _new_agreed(lib.plm_op_mdc, base_comm, args)
    return MPILinearOperator._native(hd, base_comm)
