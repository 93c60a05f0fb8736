"""Proximal operators on DistributedArrays (PyLops-MPI's pylops_mpi.proximal), over the
library's L1 and L0 (plm_prox_*).

`L1(sigma)` and `L0(sigma)` behave like pyproximal's L1 / L0 applied to a whole DistributedArray:
`f(x)` is the value reduced over the ranks, `f.prox(x, tau)` a new DistributedArray (soft / hard
threshold), `f.proxdual(x, tau)` the Moreau identity. `MPIProxOperator(prox)` accepts them or
pyproximal's own L1 / L0 objects (sigma a number, no g), as PyLops-MPI's MPIProxOperator does;
PyProximal itself is never imported.
"""
import numpy as np

from .._core import ffi, lib, call, Handle
from ..DistributedArray import DistributedArray, StackedDistributedArray

__all__ = ["L1", "L0", "MPIProxOperator"]


class _Prox:
    _create = None
    hasgrad = False

    def __init__(self, sigma=1.0):
        if callable(sigma) or not np.isscalar(sigma):
            raise NotImplementedError(f"{type(self).__name__}: sigma must be a number")
        self.sigma = float(sigma)
        self._h = Handle("plm_prox_t", "plm_prox_destroy")
        call(self._create, self.sigma, self._h.ptr)

    def __repr__(self):
        return f"<{type(self).__name__} sigma={self.sigma}>"

    def destroy(self):
        self._h.destroy()

    def __call__(self, x):
        """f(x), the same on every rank (a sum over the members of a stacked array)."""
        if isinstance(x, StackedDistributedArray):
            return self._combine([self(d) for d in x.distarrays])
        v = ffi.new("double *")
        call(lib.plm_prox_value, self._h.h, x.handle, v)
        return v[0]

    @staticmethod
    def _combine(values):
        return float(np.sum(values))

    def prox(self, x, tau, **kwargs):
        """prox_{tau f}(x): a new array of x's layout and dtype."""
        if isinstance(x, StackedDistributedArray):
            return StackedDistributedArray([self.prox(d, tau) for d in x.distarrays],
                                           base_comm=x.base_comm)
        out = x.empty_like()
        call(lib.plm_prox_apply, self._h.h, x.handle, float(tau), out.handle)
        return out

    def proxdual(self, x, tau, **kwargs):
        """prox of the convex conjugate: x - tau prox_{f/tau}(x / tau)."""
        return x - self.prox(x * (1.0 / tau), 1.0 / tau) * tau


class L1(_Prox):
    """f(x) = sigma ||x||_1; prox: soft thresholding by tau sigma (the phase kept)."""
    _create = lib.plm_prox_create_l1


class L0(_Prox):
    """f(x) = number of non-zeros; prox: hard thresholding, zero where |x| <= sqrt(2 tau sigma)."""
    _create = lib.plm_prox_create_l0


_BY_NAME = {"L1": L1, "L0": L0}


class MPIProxOperator:
    """A separable proximal operator applied to DistributedArrays (PyLops-MPI's MPIProxOperator):
    `prox` is L1/L0 of this package or pyproximal's L1/L0 (a number as sigma, no g)."""

    def __init__(self, prox):
        if isinstance(prox, _Prox):
            self.proxop = prox
        else:
            name = type(prox).__name__
            if name not in _BY_NAME:
                raise NotImplementedError(f"{name} is not a separable proximal operator, must be "
                                          "implemented directly...")
            if getattr(prox, "g", None) is not None:
                raise NotImplementedError(f"{name} with g is not available in pylopsmpi")
            self.proxop = _BY_NAME[name](getattr(prox, "sigma", 1.0))
        self.hasgrad = self.proxop.hasgrad

    def __repr__(self):
        return f"<{type(self).__name__} ({type(self.proxop).__name__})>"

    def __call__(self, x):
        return self.proxop(x)

    def prox(self, x, tau, **kwargs):
        return self.proxop.prox(x, tau)

    def proxdual(self, x, tau, **kwargs):
        return self.proxop.proxdual(x, tau)
