"""Proximal operators over the library's plm_prox_* (L1, L0, Box, MPIL2, MPIL21) and PyLops-MPI's
MPIProxOperator wrapper, with pyproximal's ProxOperator API: prox, proxdual, grad, __call__, and
the compositions postcomposition (sigma * f), precomposition (f(a x + b)), affine_addition
(f + v, f - v) and chain (g * f). Every operator of this package holds a C proximal operator
(`_plm_handle()`), so the proximal solvers (`_primal.py`, `_primaldual.py`) can hand it to the
library's solvers; a composition of a user object (or of an MPIL2 whose prox runs in Python) runs
pyproximal's formulas in Python instead.
"""
import numbers

import numpy as np

from .._core import ffi, lib, call, Handle
from ..DistributedArray import DistributedArray, StackedDistributedArray
from ..LinearOperator import _stack_handle

__all__ = ["L1", "L0", "Box", "MPIProxOperator", "MPIL2", "MPIL21"]


def _handle_of(p):
    fn = getattr(p, "_plm_handle", None)
    return fn() if fn is not None else None


def _flat(x):
    return isinstance(x, StackedDistributedArray) and all(type(d) is DistributedArray
                                                          for d in x.distarrays)


def _shifted(x, b):
    """x + b for a number b (no library call: a local add, the same on every rank)."""
    y = x.copy()
    for d in (y.distarrays if isinstance(y, StackedDistributedArray) else [y]):
        if isinstance(d, StackedDistributedArray):
            for i, m in enumerate(d.distarrays):
                d.distarrays[i] = _shifted(m, b)
        else:
            d.local_array[...] += b
    return y


def _real_dot(v, x):
    """Re(v^T x) as a float (unconjugated, as pyproximal's np.dot on real data)."""
    return float(np.real(np.asarray(v.dot(x)).ravel()[0]))


class _Compositions:
    """pyproximal's ProxOperator compositions and operators, for every proximal operator here."""
    sigmame = 1.0   # pyproximal's Moreau envelope parameter of grad (operators without a gradient)

    def postcomposition(self, sigma):
        """sigma * f: prox_{tau sigma f}, value sigma f(x), grad sigma grad f."""
        if not isinstance(sigma, numbers.Real) or isinstance(sigma, bool):
            raise NotImplementedError("sigma must be of type float")
        return MPIProxOperator(_Post(self, float(sigma)))

    def precomposition(self, a, b):
        """f(a x + b), b a number or a DistributedArray: (prox_{a^2 tau f}(a x + b) - b) / a."""
        if not isinstance(a, numbers.Real) or not (isinstance(b, numbers.Number)
                                                   or isinstance(b, DistributedArray)):
            raise NotImplementedError("a must be of type float and b must be of type float or "
                                      "DistributedArray")
        return MPIProxOperator(_Pre(self, float(a), b))

    def affine_addition(self, v):
        """f + v^T x (v a DistributedArray): prox_{tau f}(x - tau v)."""
        if not isinstance(v, DistributedArray):
            raise NotImplementedError("v must be a DistributedArray")
        return MPIProxOperator(_Affine(self, v))

    def chain(self, g):
        """prox_{tau g}(prox_{tau f}(x)), for f and g whose sum's prox is that chain."""
        return MPIProxOperator(_Chain(self, g))

    def __add__(self, v):
        return self.affine_addition(v)

    def __sub__(self, v):
        return self.affine_addition(-v)

    def __rmul__(self, sigma):
        if isinstance(sigma, numbers.Real):
            return self.postcomposition(sigma)
        return self.chain(sigma)

    def __mul__(self, other):
        # g * f is f.chain(g) (pyproximal's __rmul__), also when both are MPIProxOperators
        # (Python asks the right operand's __rmul__ only for operands of different types)
        if hasattr(other, "prox") and not isinstance(other, numbers.Number):
            return other.chain(self)
        return NotImplemented

    @property
    def H(self):
        """pyproximal's adjoint: prox and proxdual swapped (applied in Python)."""
        return MPIProxOperator(_Adjoint(self))


class _Prox(_Compositions):
    """A C proximal operator applied to whole DistributedArrays (collective calls)."""
    hasgrad = False
    _combine = staticmethod(lambda values: float(np.sum(values)))
    _stacked_in_c = False   # plm_prox_*_stacked take this operator (one agreement per stack)
    _h = None

    def _new_handle(self, create, *args):
        self._h = Handle("plm_prox_t", "plm_prox_destroy")
        call(create, *args, self._h.ptr)

    def _plm_handle(self):
        """The plm_prox_t the library's solvers may use, or None (then they run in Python)."""
        return self._h.h if self._h is not None else None

    def destroy(self):
        if self._h is not None:
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

    def _step(self, fn, fn_stacked, x, t):
        """out = fn(prox, x, t, out) on an array or a stack (one agreement per call)."""
        if isinstance(x, StackedDistributedArray):
            if self._flat_stack(x):
                out = StackedDistributedArray([d.empty_like() for d in x.distarrays],
                                              base_comm=x.base_comm)
                xs, outs = _stack_handle(x), _stack_handle(out)   # alive during the call
                call(fn_stacked, self._plm_handle(), xs.h, float(t), outs.h)
                return out
            return StackedDistributedArray([self._step(fn, fn_stacked, d, t) for d in x.distarrays],
                                           base_comm=x.base_comm)
        out = x.empty_like()
        call(fn, self._plm_handle(), x.handle, float(t), out.handle)
        return out

    def proxdual(self, x, tau, **kwargs):
        """prox of the convex conjugate (pyproximal's proxdual): explicit for L1 (the projection
        onto [-sigma, sigma]) and L21, else x - tau prox_{f/tau}(x / tau)."""
        if self._plm_handle() is None:
            return x - self.prox(x * (1.0 / tau), 1.0 / tau) * tau
        return self._step(lib.plm_prox_dual, lib.plm_prox_dual_stacked, x, tau)

    def grad(self, x):
        """pyproximal's grad: grad f(x) where f has one, else the gradient of its Moreau
        envelope (x - prox_{sigmame f}(x)) / sigmame (sigmame 1 unless set)."""
        return self._step(lib.plm_prox_gradient, lib.plm_prox_gradient_stacked, x, self.sigmame)


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
    """pyproximal's L0: f(x) = number of non-zeros; prox: hard thresholding at tau sigma, zero
    where |x| <= tau sigma (pyproximal's rule, which PyLops-MPI wraps; the C library's
    plm_prox_create_l0 keeps the exact prox's sqrt(2 tau sigma), PLM_L0_EXACT)."""

    def __init__(self, sigma=1.0):
        if callable(sigma) or not np.isscalar(sigma):
            raise NotImplementedError("L0: sigma must be a number")
        self.sigma = float(sigma)
        self._new_handle(lib.plm_prox_create_l0_threshold, self.sigma, lib.PLM_L0_PYPROXIMAL)


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


class MPIProxOperator(_Compositions):
    """A separable proximal operator applied to DistributedArrays (PyLops-MPI's MPIProxOperator):
    `prox` is L1 / L0 / Box of this package or pyproximal's L1 / L0 (a number as sigma, no g) /
    Box (numbers as bounds), or a composition of them. Values reduce with SUM (L1, L0) or
    logical AND (Box). pyproximal's compositions (postcomposition, precomposition,
    affine_addition, chain, and +, -, * and .H) give MPIProxOperators over the library's
    compositions; grad is pyproximal's (the Moreau envelope's gradient where f has none)."""

    def __init__(self, prox):
        self.proxop = prox if isinstance(prox, _Prox) else _from_pyproximal(prox)
        self.hasgrad = self.proxop.hasgrad

    @property
    def sigmame(self):
        return self.proxop.sigmame

    @sigmame.setter
    def sigmame(self, value):
        self.proxop.sigmame = float(value)

    @property
    def _stacked_in_c(self):
        return self.proxop._stacked_in_c

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


# --- compositions (pyproximal's _PostcompositionOperator, ... on DistributedArrays) ------------
class _Composed(_Prox):
    """A composition: the library's (plm_prox_postcomposition, ...) when its parts have library
    handles, else pyproximal's formulas over the parts' own methods (user objects)."""

    def __init__(self, parts, create, args):
        self._parts = parts
        hs = [_handle_of(p) for p in parts]
        self._stacked_in_c = all(getattr(p, "_stacked_in_c", False) for p in parts)
        if all(h is not None for h in hs):
            self._new_handle(create, hs[0], *args, *hs[1:])

    def __call__(self, x):
        if self._plm_handle() is not None:
            return super().__call__(x)
        return self._value(x)

    def prox(self, x, tau, **kwargs):
        if self._plm_handle() is not None:
            return super().prox(x, tau)
        if not np.isfinite(tau) or tau <= 0:
            raise ValueError("tau must be positive")
        return self._py_prox(x, tau)

    def grad(self, x):
        if self._plm_handle() is not None:
            return super().grad(x)
        return self._py_grad(x)


class _Post(_Composed):
    def __init__(self, f, sigma):
        if not np.isfinite(sigma) or sigma <= 0:
            raise ValueError(f"postcomposition: sigma {sigma} is not finite and > 0")
        self.f, self.sigma, self.hasgrad = f, sigma, f.hasgrad
        super().__init__([f], lib.plm_prox_postcomposition, (sigma,))

    def __repr__(self):
        return f"<Postcomposition {self.sigma} * {self.f!r}>"

    def _value(self, x):
        return self.sigma * self.f(x)

    def _py_prox(self, x, tau):
        return self.f.prox(x, self.sigma * tau)

    def _py_grad(self, x):
        return self.f.grad(x) * self.sigma


class _Pre(_Composed):
    def __init__(self, f, a, b):
        if not np.isfinite(a) or a == 0:
            raise ValueError(f"precomposition: a {a} must be finite and non-zero")
        self.f, self.a, self.b, self.hasgrad = f, a, b, f.hasgrad
        arr = isinstance(b, DistributedArray)
        args = (a, 0.0, b.handle) if arr else (a, float(b), ffi.NULL)
        super().__init__([f], lib.plm_prox_precomposition, args)
        if arr:
            self._stacked_in_c = False

    def __repr__(self):
        return f"<Precomposition {self.f!r}({self.a} x + b)>"

    def _ax_b(self, x):
        ax = x * self.a
        return ax + self.b if isinstance(self.b, DistributedArray) else _shifted(ax, self.b)

    def _value(self, x):
        return self.f(self._ax_b(x))

    def _py_prox(self, x, tau):
        p = self.f.prox(self._ax_b(x), self.a ** 2 * tau)
        p = p - self.b if isinstance(self.b, DistributedArray) else _shifted(p, -self.b)
        return p * (1.0 / self.a)

    def _py_grad(self, x):
        return self.f.grad(self._ax_b(x)) * self.a


class _Affine(_Composed):
    def __init__(self, f, v):
        self.f, self.v, self.hasgrad = f, v, f.hasgrad
        super().__init__([f], lib.plm_prox_affine_addition, (v.handle,))
        self._stacked_in_c = False

    def __repr__(self):
        return f"<AffineAddition {self.f!r} + v>"

    def _value(self, x):
        return self.f(x) + _real_dot(self.v, x)

    def _py_prox(self, x, tau):
        return self.f.prox(x - self.v * tau, tau)

    def _py_grad(self, x):
        return self.f.grad(x) + self.v


class _Chain(_Composed):
    def __init__(self, f, g):
        self.f, self.g = f, g
        self.hasgrad = f.hasgrad and g.hasgrad
        super().__init__([f, g], lib.plm_prox_chain, ())

    def __repr__(self):
        return f"<Chain {self.g!r} after {self.f!r}>"

    def _value(self, x):
        return self.f(x) + self.g(x)   # pyproximal's g(f(x)) is not defined for vectors

    def _py_prox(self, x, tau):
        return self.g.prox(self.f.prox(x, tau), tau)

    def _py_grad(self, x):
        return self.f.grad(x) + self.g.grad(x)


class _Adjoint(_Prox):
    """pyproximal's f.H: prox and proxdual swapped; the value is f's (Python only)."""

    def __init__(self, f):
        self.f, self.hasgrad = f, f.hasgrad

    def __repr__(self):
        return f"<Adjoint {self.f!r}>"

    def __call__(self, x):
        return self.f(x)

    def prox(self, x, tau, **kwargs):
        return self.f.proxdual(x, tau)

    def proxdual(self, x, tau, **kwargs):
        return self.f.prox(x, tau)

    def grad(self, x):
        return self.f.grad(x)


# --- MPIL21 ---------------------------------------------------------------------------------------
class _L21Core(_Prox):
    _stacked_in_c = True

    def __init__(self, ndim, sigma):
        self._new_handle(lib.plm_prox_create_l21, int(ndim), float(sigma))


class MPIL21(MPIProxOperator):
    """PyLops-MPI's MPIL21: the L2,1 norm of a StackedDistributedArray of ndim
    DistributedArrays of one layout, element j of every member forming group j (the column j of
    pyproximal's L21 ndim x N view): f(x) = sigma sum_j ||x_j||_2; prox: row-wise group soft
    thresholding x_j (1 - tau sigma / max(||x_j||, tau sigma)); proxdual: sigma x_j /
    max(||x_j||, sigma). The norms sum |x_ij|^2 (complex: the modulus squared); they never
    leave a rank, f is one reduction (plm_prox_create_l21). A stack of another member count
    raises ValueError (SizeMismatchError), as PyLops-MPI's _check_dims."""

    def __init__(self, ndim, sigma=1.0):
        self.ndim, self.sigma = int(ndim), float(sigma)
        self.proxop = _L21Core(self.ndim, self.sigma)
        self.hasgrad = False

    def __repr__(self):
        return f"<MPIL21 ndim={self.ndim} sigma={self.sigma}>"

    def _check_dims(self, x):
        n = x.narrays if isinstance(x, StackedDistributedArray) else 1
        if n != self.ndim:
            raise ValueError(f"Expected {self.ndim} DistributedArray, got {n}")

    def __call__(self, x):
        return float(self.proxop(x))

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
    _stacked_in_c = False   # single arrays only (its b, q and x0)
    sigmame = 1.0
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
