"""PrimalDual and AdaptivePrimalDual with pyproximal's signatures and iterations
(pylops_mpi.proximal.optimization.primaldual; pyproximal.optimization.primaldual).

As in `_primal.py`, two ways to run, the same iterations: in the library
(plm_solve_primal_dual[_stacked], plm_solve_adaptive_primal_dual) when both proximal operators
and A are this package's, the arrays plain and unmasked and show is False; in Python otherwise
(user proximal objects, show=True for pyproximal's table, ...), over the package's arrays and
operators, a failure of user code on some ranks becoming a CallbackError on every rank.

y, the dual variable, lives on A's range: a DistributedArray for a plain A, a
StackedDistributedArray for a stacked one (MPIGradient, MPIStackedVStack), as in total variation
with proxg = MPIL21 on the gradient's members.
"""
import sys
import time

import numpy as np
from mpi4py import MPI

from .._core import ffi, lib, call, checks, agree
from ..DistributedArray import DistributedArray, StackedDistributedArray
from ._primal import (_handle_of, _plain, _first, _caller, _guarded, _run_native,
                      _same_everywhere)

__all__ = ["PrimalDual", "AdaptivePrimalDual"]


def _is_array(v):
    return isinstance(v, (DistributedArray, StackedDistributedArray))


def _steps(v, niter, dtype):
    """pyproximal's step sequence: a number becomes niter copies in x0's dtype (so float32 data
    round it), an array is taken as it is. Returns (values, fixed)."""
    if isinstance(v, (int, float, np.floating, np.integer)):
        rounded = np.real(np.asarray(v * np.ones(max(niter, 1), dtype=dtype)))
        return rounded.astype(np.float64), True
    return np.asarray(v, dtype=np.float64).ravel(), False


def _range_layouts(A):
    """The layouts of A's range parts (None, with the part count, for an operator defined in
    Python)."""
    from ..LinearOperator import _layout_of, _parts
    h = getattr(A, "handle", None)
    if h is None:
        return None, 0
    nd, nr = _parts(h)
    if nd != 1:
        return None, 0
    if nr == 1:
        return [_layout_of(lib.plm_op_range, h)], 1
    return [_layout_of(lib.plm_op_range_part, h, i) for i in range(nr)], nr


def _zeros_on_range(A, x):
    """y = 0 on A's range: a DistributedArray, or a StackedDistributedArray for a stacked A."""
    from ..LinearOperator import _new_on
    layouts, nr = _range_layouts(A)
    if layouts is None:
        return (A.matvec(x)).zeros_like()
    dt = np.dtype(A.dtype)
    ys = [_new_on(l, dt, x.base_comm) for l in layouts]
    for y in ys:
        y.local_array[...] = 0
    return ys[0] if nr == 1 else StackedDistributedArray(ys, base_comm=x.base_comm)


def _value(cf, p, v):
    f = cf(p, v)
    return 0.0 if isinstance(f, (bool, np.bool_)) else float(f)


def _zx(z, x):
    return 0.0 if z is None else float(np.real(np.asarray(z.dot(x)).ravel()[0]))


def PrimalDual(proxf, proxg, A, x0, tau, mu, y0=None, z=None, theta=1.0, niter=10, gfirst=True,
               callback=None, callbacky=False, returny=False, show=False):
    """Chambolle-Pock's primal-dual algorithm for min_x f(x) + g(A x) + z^T x (pyproximal's
    PrimalDual): with gfirst, y = proxg.proxdual(y + mu_k A xhat, mu_k),
    x = proxf.prox(x - tau_k (A^H y + z), tau_k), xhat = x + theta (x - x_old); without, the
    x-step first. tau and mu are numbers or one value per iteration; y0 None starts from 0 on
    A's range. Returns x, or (x, y) with returny; callback(x) (callback(x, y) with callbacky)
    runs after every iteration. PyLops-MPI's argument order (x0, y0, tau, mu) is taken too: a
    DistributedArray (or None) where tau goes is y0."""
    if tau is None or _is_array(tau):     # PyLops-MPI's PrimalDual(proxf, proxg, A, x0, y0, tau, mu)
        y0, tau, mu = tau, mu, y0
    comm = x0.base_comm
    with checks() as c:
        niter = int(niter)
        taus, fixedtau = _steps(tau, niter, x0.dtype)
        mus, fixedmu = _steps(mu, niter, x0.dtype)
        if (not fixedtau and taus.size < niter) or (not fixedmu and mus.size < niter):
            raise ValueError(f"PrimalDual: tau and mu need niter ({niter}) values")
        theta = float(theta)
        if not (hasattr(proxf, "prox") and hasattr(proxg, "proxdual")):
            raise TypeError("PrimalDual: proxf needs prox and proxg needs proxdual")
    agree(comm, c)
    hf, hg = _handle_of(proxf), _handle_of(proxg)
    layouts, nr = _range_layouts(A)
    stacked = nr > 1
    ys_ok = y0 is None or (_plain(y0) if not stacked else (
        isinstance(y0, StackedDistributedArray) and _plain(*y0.distarrays)))
    native = (hf is not None and hg is not None and layouts is not None and _plain(x0)
              and ys_ok and (z is None or _plain(z)) and not show)
    if comm.allreduce(native, op=MPI.LAND):      # one way on every rank
        return _pd_native(hf, hg, A, x0, y0, z, taus, fixedtau, mus, fixedmu, theta, niter,
                          gfirst, callback, callbacky, returny, stacked)
    _same_everywhere(comm, "PrimalDual", [taus[:max(niter, 1)], mus[:max(niter, 1)], theta,
                                          niter, bool(gfirst), bool(show)])
    return _pd_python(proxf, proxg, A, x0, y0, z, taus, fixedtau, mus, fixedmu, theta, niter,
                      gfirst, callback, callbacky, returny, show, hf is not None, hg is not None)


def _pd_native(hf, hg, A, x0, y0, z, taus, fixedtau, mus, fixedmu, theta, niter, gfirst,
               callback, callbacky, returny, stacked):
    from ..LinearOperator import _conform, _layout_of, _stack_handle
    comm = x0.base_comm
    dt = np.dtype(A.dtype)
    x = _conform(x0, _layout_of(lib.plm_op_domain if not stacked else lib.plm_op_domain_part,
                                A.handle, *(() if not stacked else (0,))), dt, comm)
    x = x.copy() if x is x0 else x
    y = y0.copy() if y0 is not None else _zeros_on_range(A, x)
    t = np.ascontiguousarray(taus[:1] if fixedtau or niter == 0 else taus[:niter])
    m = np.ascontiguousarray(mus[:1] if fixedmu or niter == 0 else mus[:niter])
    tp, mp = ffi.cast("double *", ffi.from_buffer(t)), ffi.cast("double *", ffi.from_buffer(m))
    zh = z.handle if z is not None else ffi.NULL
    cb = callback
    if callback is not None and callbacky:
        cb = lambda xx: callback(xx, y)   # noqa: E731 - y is updated in place by the library
    if stacked:
        ys = _stack_handle(y)
        _run_native(comm, cb, lambda info: call(
            lib.plm_solve_primal_dual_stacked, hf, hg, A.handle, x.handle, ys.h, int(y0 is not None),
            tp, t.size, mp, m.size, zh, theta, niter, int(bool(gfirst)), info))
    else:
        _run_native(comm, cb, lambda info: call(
            lib.plm_solve_primal_dual, hf, hg, A.handle, x.handle, y.handle, int(y0 is not None),
            tp, t.size, mp, m.size, zh, theta, niter, int(bool(gfirst)), info))
    return (x, y) if returny else x


def _pd_python(proxf, proxg, A, x0, y0, z, taus, fixedtau, mus, fixedmu, theta, niter, gfirst,
               callback, callbacky, returny, show, f_native, g_native):
    """pyproximal's iterations and table over the package's arrays."""
    comm = x0.base_comm
    rank = comm.Get_rank()
    cf, cg_ = _caller(comm, f_native), _caller(comm, g_native)
    if show and rank == 0:
        tstart = time.time()
        print("Primal-dual: min_x f(Ax) + x^T z + g(x)\n"
              "---------------------------------------------------------\n"
              "Proximal operator (f): %s\n"
              "Proximal operator (g): %s\n"
              "Linear operator (A): %s\n"
              "Additional vector (z): %s\n"
              "tau = %s\t\tmu = %s\ntheta = %.2f\t\tniter = %d\n"
              % (type(proxf), type(proxg), type(A), None if z is None else "vector",
                 str(taus[0]) if fixedtau else "Variable", str(mus[0]) if fixedmu else "Variable",
                 theta, niter))
        print("   Itn       x[0]          f           g          z^x       J = f + g + z^x")
        sys.stdout.flush()
    x = x0.copy()
    y = y0.copy() if y0 is not None else _zeros_on_range(A, x)
    xhat = x.copy()
    for iiter in range(niter):
        t, m = taus[0 if fixedtau else iiter], mus[0 if fixedmu else iiter]
        xold = x.copy()
        if gfirst:
            y = cg_(proxg.proxdual, y + A.matvec(xhat) * m, m)
            aty = A.rmatvec(y)
            if z is not None:
                aty = aty + z
            x = cf(proxf.prox, x - aty * t, t)
            xhat = x + (x - xold) * theta
        else:
            aty = A.rmatvec(y)
            if z is not None:
                aty = aty + z
            x = cf(proxf.prox, x - aty * t, t)
            xhat = x + (x - xold) * theta
            y = cg_(proxg.proxdual, y + A.matvec(xhat) * m, m)
        if callback is not None:
            if callbacky:
                _guarded(comm, callback, x, y)
            else:
                _guarded(comm, callback, x)
        if show and (iiter < 10 or niter - iiter < 10 or iiter % (niter // 10) == 0):
            pf, pg = _value(cf, proxf, x), _value(cg_, proxg, A.matvec(x))
            zx = _zx(z, x)
            if rank == 0:
                print("%6g  %12.5e  %10.3e  %10.3e  %10.3e      %10.3e"
                      % (iiter + 1, _first(x), pf, pg, zx, pf + pg + zx))
                sys.stdout.flush()
    if show and rank == 0:
        print("\nTotal time (s) = %.2f" % (time.time() - tstart))
        print("---------------------------------------------------------\n")
        sys.stdout.flush()
    return (x, y) if returny else x


def AdaptivePrimalDual(proxf, proxg, A, x0, tau, mu, alpha=0.5, eta=0.95, s=1.0, delta=1.5,
                       z=None, niter=10, tol=1e-10, callback=None, show=False):
    """pyproximal's AdaptivePrimalDual (Goldstein et al.'s residual balancing): the PrimalDual
    iterations with tau and mu changed when the primal and dual residuals drift apart; it
    stops after niter iterations or when a residual falls to tol. Returns
    (x, (taus, mus, alphas)), the steps' history (one more value than iterations run). As in
    pyproximal, the z term of the primal residual applies A^H to z, so z needs a square A."""
    comm = x0.base_comm
    with checks() as c:
        niter = int(niter)
        tau, mu, alpha, eta, s, delta, tol = (float(v) for v in (tau, mu, alpha, eta, s, delta, tol))
        if not (hasattr(proxf, "prox") and hasattr(proxg, "proxdual")):
            raise TypeError("AdaptivePrimalDual: proxf needs prox and proxg needs proxdual")
    agree(comm, c)
    hf, hg = _handle_of(proxf), _handle_of(proxg)
    layouts, nr = _range_layouts(A)
    native = (hf is not None and hg is not None and layouts is not None and _plain(x0)
              and (z is None or _plain(z)) and not show)
    if comm.allreduce(native, op=MPI.LAND):      # one way on every rank
        from ..LinearOperator import _conform, _layout_of
        dt = np.dtype(A.dtype)
        stacked = nr > 1
        x = _conform(x0, _layout_of(lib.plm_op_domain if not stacked else lib.plm_op_domain_part,
                                    A.handle, *(() if not stacked else (0,))), dt, comm)
        x = x.copy() if x is x0 else x
        steps = np.zeros(3 * (niter + 1))
        its = ffi.new("int64_t *")

        def solve(info):
            call(lib.plm_solve_adaptive_primal_dual, hf, hg, A.handle, x.handle,
                 z.handle if z is not None else ffi.NULL, tau, mu, alpha, eta, s, delta, niter,
                 tol, ffi.cast("double *", ffi.from_buffer(steps)), steps.size, info)
            call(lib.plm_solver_info_iterations, info, its)
        _run_native(comm, callback, solve)
        n, k = niter + 1, int(its[0]) + 1
        return x, (steps[:k].copy(), steps[n:n + k].copy(), steps[2 * n:2 * n + k].copy())
    _same_everywhere(comm, "AdaptivePrimalDual", [tau, mu, alpha, eta, s, delta, niter, tol,
                                                  bool(show)])
    return _apd_python(proxf, proxg, A, x0, tau, mu, alpha, eta, s, delta, z, niter, tol,
                       callback, show, hf is not None, hg is not None)


def _norm(v):
    return float(np.asarray(v.norm()).ravel()[0])


def _apd_python(proxf, proxg, A, x0, tau, mu, alpha, eta, s, delta, z, niter, tol, callback,
                show, f_native, g_native):
    comm = x0.base_comm
    rank = comm.Get_rank()
    cf, cg_ = _caller(comm, f_native), _caller(comm, g_native)
    if show and rank == 0:
        tstart = time.time()
        print("Adaptive Primal-dual: min_x f(Ax) + x^T z + g(x)\n"
              "---------------------------------------------------------\n"
              "Proximal operator (f): %s\n"
              "Proximal operator (g): %s\n"
              "Linear operator (A): %s\n"
              "Additional vector (z): %s\n"
              "tau0 = %10e\tmu0 = %10e\n"
              "alpha0 = %10e\teta = %10e\n"
              "s = %10e\tdelta = %10e\n"
              "niter = %d\t\ttol = %10e\n"
              % (type(proxf), type(proxg), type(A), None if z is None else "vector", tau, mu,
                 alpha, eta, s, delta, niter, tol))
        print("   Itn       x[0]          f           g          z^x       J = f + g + z^x")
        sys.stdout.flush()
    x = x0.copy()
    y = _zeros_on_range(A, x)
    ax = y.copy()
    aty = x.zeros_like()
    atz = A.rmatvec(z) if z is not None else None
    taus, mus, alphas = [tau], [mu], [alpha]
    p = d = tol + 1.0
    iiter = 0
    while iiter < niter and p > tol and d > tol:
        xold, yold, axold, atyold = x.copy(), y.copy(), ax.copy(), aty.copy()
        if z is not None:
            aty = aty + z
        x = cf(proxf.prox, x - aty * tau, tau)
        ax = A.matvec(x)
        axhat = ax * 2 - axold
        y = cg_(proxg.proxdual, y + axhat * mu, mu)
        aty = A.rmatvec(y)
        r = (xold - x) * (1.0 / tau) - (atyold - aty)
        if z is not None:
            r = r - atz + z
        p = _norm(r)
        d = _norm((yold - y) * (1.0 / mu) - (axold - ax))
        if p > s * d * delta:
            tau /= 1 - alpha
            mu *= 1 - alpha
            alpha *= eta
        elif p < s * d / delta:
            tau *= 1 - alpha
            mu /= 1 - alpha
            alpha *= eta
        taus.append(tau)
        mus.append(mu)
        alphas.append(alpha)
        iiter += 1
        if callback is not None:
            _guarded(comm, callback, x)
        if show and (iiter < 10 or niter - iiter < 10 or iiter % (niter // 10) == 0):
            pf, pg = _value(cf, proxf, x), _value(cg_, proxg, A.matvec(x))
            zx = _zx(z, x)
            if rank == 0:
                print("%6g  %12.5e  %10.3e  %10.3e  %10.3e      %10.3e"
                      % (iiter + 1, _first(x), pf, pg, zx, pf + pg + zx))
                sys.stdout.flush()
    if show and rank == 0:
        print("\nTotal time (s) = %.2f" % (time.time() - tstart))
        sys.stdout.flush()
    return x, (np.array(taus), np.array(mus), np.array(alphas))
