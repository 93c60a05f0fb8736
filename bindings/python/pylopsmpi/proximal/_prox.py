"""Proximal operators over the library's plm_prox_* (L1, L0, Box, MPIL2) and PyLops-MPI's
MPIProxOperator wrapper. Every operator here holds a C proximal operator (`_plm_handle()`), so the
proximal solvers (`_primal.py`) can hand it to the library's solvers.
"""
import numpy as np

from .._core import ffi, lib, call, Handle
from ..DistributedArray import DistributedArray, StackedDistributedArray
from ..LinearOperator import _stack_handle

__all__ = ["L1", "L0", "Box", "MPIProxOperator", "MPIL2"]


class _Prox:
    """A C proximal operator applied to whole DistributedArrays (collective calls)."""
    hasgrad = False
    _combine = staticmethod(lambda values: float(np.sum(values)))
    _stacked_in_c = False   # plm_prox_*_stacked take this operator (one agreement per stack)

    def _new_handle(self, create, *args):
        self._h = Handle("plm_prox_t", "plm_prox_destroy")
        call(create, *args, self._h.ptr)

    def _plm_handle(self):
        """The plm_prox_t the library's solvers may use, or None (then they run in Python)."""
        return self._h.h

    def destroy(self):
        self._h.destroy()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()

    def _value(self, x):
        v = ffi.new("double *")
        call(lib.plm_prox_value, self._plm_handle(), x.handle, v)
        return v[0]

    def __call__(self, x):
        """f(x), the same on every rank (stacked arrays: the members' values combined)."""
        if isinstance(x, StackedDistributedArray):
            if self._flat_stack(x):
                v, xs = ffi.new("double *"), _stack_handle(x)   # xs: alive during the call
                call(lib.plm_prox_value_stacked, self._plm_handle(), xs.h, v)
                return self._combine([v[0]])
            return self._combine([self(d) for d in x.distarrays])
        return self._value(x)

    def _flat_stack(self, x):
        return self._stacked_in_c and all(type(d) is DistributedArray for d in x.distarrays)

    def prox(self, x, tau, **kwargs):
        """prox_{tau f}(x): a new array of x's layout and dtype."""
        if isinstance(x, StackedDistributedArray):
            if self._flat_stack(x):
                out = StackedDistributedArray([d.empty_like() for d in x.distarrays],
                                              base_comm=x.base_comm)
                xs, outs = _stack_handle(x), _stack_handle(out)   # alive during the call
                call(lib.plm_prox_apply_stacked, self._plm_handle(), xs.h, float(tau), outs.h)
                return out
            return StackedDistributedArray([self.prox(d, tau) for d in x.distarrays],
                                           base_comm=x.base_comm)
        out = x.empty_like()
        call(lib.plm_prox_apply, self._plm_handle(), x.handle, float(tau), out.handle)
        return out

    def proxdual(self, x, tau, **kwargs):
        """prox of the convex conjugate: x - tau prox_{f/tau}(x / tau)."""
        return x - self.prox(x * (1.0 / tau), 1.0 / tau) * tau

    def grad(self, x):
        """grad f(x) (operators with hasgrad only; the others raise NotSupportedError)."""
        if isinstance(x, StackedDistributedArray):
            return StackedDistributedArray([self.grad(d) for d in x.distarrays],
                                           base_comm=x.base_comm)
        out = x.empty_like()
        call(lib.plm_prox_grad, self._plm_handle(), x.handle, out.handle)
        return out


class _Threshold(_Prox):
    _create = None
    _stacked_in_c = True

    def __init__(self, sigma=1.0):
        if callable(sigma) or not np.isscalar(sigma):
            raise NotImplementedError(f"{type(self).__name__}: sigma must be a number")
        self.sigma = float(sigma)
        self._new_handle(self._create, self.sigma)

    def __repr__(self):
        return f"<{type(self).__name__} sigma={self.sigma}>"


class L1(_Threshold):
    """f(x) = sigma ||x||_1; prox: soft thresholding by tau sigma (the phase kept)."""
    _create = lib.plm_prox_create_l1


class L0(_Threshold):
    """f(x) = number of non-zeros; prox: hard thresholding, zero where |x| <= sqrt(2 tau sigma)."""
    _create = lib.plm_prox_create_l0


class Box(_Prox):
    """pyproximal's Box: the indicator of [lower, upper]; prox (any tau): the projection
    min(max(x, lower), upper). f(x) is True when every element lies in the box (a logical AND
    over the ranks, as PyLops-MPI's MPIProxOperator reduces Box). Real dtypes only; the bounds are
    numbers (pyproximal also takes arrays: NotImplementedError here)."""
    _combine = staticmethod(all)
    _stacked_in_c = True

    def __init__(self, lower=-np.inf, upper=np.inf):
        for v in (lower, upper):
            if callable(v) or not np.isscalar(v):
                raise NotImplementedError("Box: lower and upper must be numbers (no arrays)")
        self.lower, self.upper = float(lower), float(upper)
        self._new_handle(lib.plm_prox_create_box, self.lower, self.upper)

    def __repr__(self):
        return f"<Box lower={self.lower} upper={self.upper}>"

    def _value(self, x):
        return bool(super()._value(x))


def _from_pyproximal(prox):
    """One of this package's operators for a pyproximal L1 / L0 / Box (by class name)."""
    name = type(prox).__name__
    if name not in ("L1", "L0", "Box"):
        raise NotImplementedError(f"{name} is not a separable proximal operator, must be "
                                  "implemented directly...")
    if name == "Box":
        return Box(getattr(prox, "lower", -np.inf), getattr(prox, "upper", np.inf))
    if getattr(prox, "g", None) is not None:
        raise NotImplementedError(f"{name} with g is not available in pylopsmpi")
    return (L1 if name == "L1" else L0)(getattr(prox, "sigma", 1.0))


class MPIProxOperator:
    """A separable proximal operator applied to DistributedArrays (PyLops-MPI's MPIProxOperator):
    `prox` is L1 / L0 / Box of this package or pyproximal's L1 / L0 (a number as sigma, no g) /
    Box (numbers as bounds). Values reduce with SUM (L1, L0) or logical AND (Box)."""

    def __init__(self, prox):
        self.proxop = prox if isinstance(prox, _Prox) else _from_pyproximal(prox)
        self.hasgrad = self.proxop.hasgrad

    def __repr__(self):
        return f"<{type(self).__name__} ({type(self.proxop).__name__})>"

    def _plm_handle(self):
        return self.proxop._plm_handle()

    def __call__(self, x):
        return self.proxop(x)

    def prox(self, x, tau, **kwargs):
        return self.proxop.prox(x, tau)

    def proxdual(self, x, tau, **kwargs):
        return self.proxop.proxdual(x, tau)

    def grad(self, x):
        return self.proxop.grad(x)


class _L2Core(_Prox):
    """The C L2 of an MPIL2: one plm_prox_create_l2 handle."""
    hasgrad = True

    def __init__(self, op, b, q, sigma, alpha, qgrad, niter, tol, x0, warm, solver):
        null = ffi.NULL
        self._keep = (op, b, q, x0)
        self._new_handle(lib.plm_prox_create_l2, op.handle if op is not None else null,
                         b.handle if b is not None else null, q.handle if q is not None else null,
                         float(sigma), float(alpha), int(bool(qgrad)), int(niter), float(tol),
                         x0.handle if x0 is not None else null, int(bool(warm)),
                         lib.PLM_L2_CG if solver == "cg" else lib.PLM_L2_CGLS)


class MPIL2(MPIProxOperator):
    """PyLops-MPI's MPIL2: f(x) = sigma/2 ||Op x - b||^2 + alpha q^T x (Op x replaced by x without
    Op, b by 0 without b, the q term dropped without q), over the library's L2
    (plm_prox_create_l2).

    The prox with Op runs `niter` iterations of CG on the normal equations (solver="cg") or CGLS
    on the regularised system (solver="cgls") from x0, warm-started from the last prox's solution
    when warm; niter may be a function of the number of prox calls so far (then each prox makes a
    library L2 for that call, and the warm start is held here in `x0`). kwargs_solver holds the
    inner solver's keyword arguments, PyLops-MPI's keys: `tol` (1e-4 by default), and `show`,
    `itershow`, `callback` and (cgls) `damp`, as this package's cg / cgls take them. With `tol`
    alone the prox runs in the library; with any other key it runs PyLops-MPI's iterations in
    Python over this package's cg / cgls (the same inner systems), and the proximal solvers then
    take their Python path too. An unknown key raises TypeError (as PyLops-MPI's solver would
    when called). Op must be an operator of this package with a library handle
    (MPIShellOperator for one defined in Python), a plain distributed one (not stacked). As in
    PyLops-MPI, Op is ignored when b is None. The q term's value is alpha Re(q^T x).
    """

    def __init__(self, Op=None, b=None, q=None, sigma=1.0, alpha=1.0, qgrad=True, niter=10,
                 x0=None, warm=True, solver="cgls", kwargs_solver=None):
        if Op is not None and x0 is None:
            raise ValueError("x0 must be passed when Op is not None")
        if solver not in ("cg", "cgls"):
            raise ValueError(f"Provided solver={solver}. Available options are 'cg' or 'cgls'.")
        self.kwargs_solver = {} if kwargs_solver is None else dict(kwargs_solver)
        keys = {"tol", "show", "itershow", "callback"} | ({"damp"} if solver == "cgls" else set())
        unknown = sorted(set(self.kwargs_solver) - keys)
        if unknown:
            raise TypeError(f"MPIL2: kwargs_solver {unknown} are not arguments of {solver} "
                            f"({sorted(keys)})")
        self._py = bool(set(self.kwargs_solver) - {"tol"})   # the prox runs in Python
        if not callable(niter) and int(niter) != niter:
            raise ValueError(f"MPIL2: niter {niter} is not an integer or a function")
        self.Op, self.b, self.q, self.x0 = Op, b, q, x0
        self.sigma, self.alpha, self.qgrad = float(sigma), float(alpha), bool(qgrad)
        self.niter, self.warm, self.solver = niter, bool(warm), solver
        self.tol = float(self.kwargs_solver.get("tol", 1e-4))
        self.count = 0
        self.hasgrad = True
        self.proxop = self
        op = Op if (Op is not None and b is not None) else None    # PyLops-MPI ignores Op without b
        if op is not None:
            if getattr(op, "handle", None) is None:
                raise NotImplementedError("MPIL2: Op must be an operator with a library handle "
                                          "(an operator of this package or an MPIShellOperator)")
            b, q, x0 = self._on_op(op, b, q, x0)
        else:
            x0 = None
        self._args = (op, b, q, x0)
        # niter as a function: one library L2 per prox call (see prox); the value and gradient
        # do not depend on niter
        n = 0 if callable(niter) else int(niter)
        self._core = _L2Core(op, b, q, self.sigma, self.alpha, self.qgrad, n, self.tol, x0,
                             self.warm, solver)

    @staticmethod
    def _on_op(op, b, q, x0):
        """b on Op's range, q and x0 on its domain, with its dtype (copies when not already)."""
        from ..LinearOperator import _conform, _layout_of
        dt = np.dtype(op.dtype)
        dom = _layout_of(lib.plm_op_domain, op.handle)
        ran = _layout_of(lib.plm_op_range, op.handle)
        b = _conform(b, ran, dt, op.base_comm)
        q = _conform(q, dom, dt, op.base_comm) if q is not None else None
        x0 = _conform(x0, dom, dt, op.base_comm)
        return b, q, x0

    def __repr__(self):
        return f"<MPIL2 sigma={self.sigma} solver={self.solver}>"

    def _plm_handle(self):
        return None if (callable(self.niter) or self._py) else self._core._plm_handle()

    def destroy(self):
        self._core.destroy()

    def __call__(self, x):
        return self._core(x)

    def grad(self, x):
        return self._core.grad(x)

    def prox(self, x, tau, **kwargs):
        self.count += 1
        op, b, q, x0 = self._args
        if self._py and op is not None:
            return self._prox_python(x, tau)
        if not callable(self.niter):
            return self._core.prox(x, tau)
        if op is None:
            return self._core.prox(x, tau)
        core = _L2Core(op, b, q, self.sigma, self.alpha, self.qgrad, int(self.niter(self.count)),
                       self.tol, x0, False, self.solver)
        try:
            out = core.prox(x, tau)
        finally:
            core.destroy()
        if self.warm:
            self._args = (op, b, q, out.copy())
            self.x0 = self._args[3]
        return out

    def proxdual(self, x, tau, **kwargs):
        return x - self.prox(x * (1.0 / tau), 1.0 / tau) * tau

    def _prox_python(self, x, tau):
        """PyLops-MPI's prox with Op, over this package's cg / cgls with kwargs_solver: CG on
        (I + tau sigma Op^H Op) x = x + tau sigma Op^H b - tau alpha q, or CGLS on
        [sqrt(tau sigma) Op; I] x = [sqrt(tau sigma) b; x - tau alpha q], from x0."""
        from ..LinearOperator import _PyOp, _conform, _layout_of
        from ..optimization import cg, cgls
        if not np.isfinite(tau) or tau <= 0:
            raise ValueError("tau must be positive")
        op, b, q, x0 = self._args
        niter = int(self.niter(self.count)) if callable(self.niter) else int(self.niter)
        ts = float(tau * self.sigma)
        comm = op.base_comm
        n = op.shape[1]
        x = _conform(x, _layout_of(lib.plm_op_domain, op.handle), np.dtype(op.dtype), comm)
        ident = _PyOp((n, n), op.dtype, comm, lambda v: v.copy(), lambda v: v.copy())
        if self.solver == "cg":
            y = x + (op.H @ b) * (tau * self.sigma)
            if q is not None:
                y = y - q * (tau * self.alpha)
            out = cg(ident + (op.H * op) * ts, y, x0=x0, niter=niter, **self.kwargs_solver)[0]
        else:
            y = x - q * (tau * self.alpha) if q is not None else x.copy()
            s = np.sqrt(ts)
            reg = _PyOp((op.shape[0] + n, n), op.dtype, comm,
                        lambda v: StackedDistributedArray([(op @ v) * s, v.copy()], base_comm=comm),
                        lambda w: op.H @ w[0] * s + w[1])
            breg = StackedDistributedArray([b * s, y], base_comm=comm)
            out = cgls(reg, breg, x0=x0, niter=niter, **self.kwargs_solver)[0]
        if self.warm:
            self._args = (op, b, q, out.copy())
            self.x0 = self._args[3]
        return out
