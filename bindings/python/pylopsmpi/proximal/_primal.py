"""ProximalGradient and ADMML2 with PyLops-MPI's signatures, iterations and results
(pylops_mpi.proximal.optimization.primal, itself pyproximal's solvers on DistributedArrays).

Two ways to run, the same iterations:
- in the library (plm_solve_proximal_gradient / plm_solve_admml2) when every proximal operator
  is one of this package's (L1, L0, Box, MPIL2 with an integer niter, MPIProxOperator over them),
  the arrays are plain unmasked DistributedArrays, the operators have library handles, and
  show is False; ADMML2 with a stacked A (MPIGradient for total variation, or a composite of
  it) and an L1 / L0 / Box g runs plm_solve_admml2_stacked, z a stack with A's nesting. A `callback(x)` runs from the library after each iteration (x is lent for the
  call); an exception in it stops the solve on every rank after that iteration and becomes a
  CallbackError on every rank (the original on the rank where it was raised).
- in Python otherwise (user proximal objects with prox / grad / __call__ on DistributedArrays,
  stacked arrays, show=True for PyLops-MPI's printed table, ...), over the package's array
  operations. The user's functions run between library calls, so they may communicate; an
  exception in one of them (or in the callback) on some ranks becomes a CallbackError on every
  rank after the call (one allreduce), as long as the other ranks did not wait in a collective
  the failing rank never reached.
User objects are not handed to the library through plm_prox_create_callback: that C interface
calls prox / grad / value on one rank's local block and forbids collective calls in them,
whereas an object on DistributedArrays may reduce (its __call__ always does) or apply operators.
"""
import sys
import time
import traceback
from math import sqrt

import numpy as np
from mpi4py import MPI

from .._core import ffi, lib, call, checks, agree, Handle, new_ctx
from ..errors import CallbackError, InvalidArgumentError
from ..DistributedArray import DistributedArray, StackedDistributedArray

__all__ = ["ProximalGradient", "ADMML2"]

_ACCEL = {None: lib.PLM_ACCEL_NONE, "None": lib.PLM_ACCEL_NONE,
          "vandenberghe": lib.PLM_ACCEL_VANDENBERGHE, "fista": lib.PLM_ACCEL_FISTA}


# --- agreement on user code -----------------------------------------------------------------------
def _raise_agreed(comm, exc):
    """One allreduce: when user code raised on some rank, a CallbackError on every rank (carrying
    `original` and `traceback` on the ranks where it was raised)."""
    rank, size = comm.Get_rank(), comm.Get_size()
    first = comm.allreduce(rank if exc is not None else size, op=MPI.MIN)
    if first == size:
        return
    desc = comm.bcast(f"{type(exc).__name__}: {exc}" if rank == first else None, root=first)
    err = CallbackError(lib.PLM_ERR_CALLBACK, f"on rank {first}: a Python callback raised {desc}",
                        original=exc)
    err.traceback = getattr(exc, "__plm_traceback__", None) if exc is not None else None
    if exc is not None:
        raise err from exc
    raise err


def _guarded(comm, fn, *args):
    """fn(*args) for user code, its failure agreed over comm."""
    exc = out = None
    try:
        out = fn(*args)
    except Exception as e:  # noqa: B902 - every failure becomes an agreed CallbackError
        e.__plm_traceback__ = traceback.format_exc()
        exc = e
    _raise_agreed(comm, exc)
    return out


def _caller(comm, native):
    """How to call a proximal operator's methods: directly when the library runs them (their
    failures are agreed there), guarded otherwise."""
    return (lambda fn, *a: fn(*a)) if native else (lambda fn, *a: _guarded(comm, fn, *a))


def _same_everywhere(comm, what, values):
    """InvalidArgumentError on every rank when values (numbers, strings, arrays) differ from rank
    0's (the Python iterations' version of the library's agreement on arguments)."""
    ref = comm.bcast(values, root=0)
    differs = any(not np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(values, ref)) \
        if len(values) == len(ref) else True
    bad = comm.allreduce(comm.Get_rank() if differs else comm.Get_size(), op=MPI.MIN)
    if bad < comm.Get_size():
        raise InvalidArgumentError(lib.PLM_ERR_INVALID_ARG,
                                   f"on rank {bad}: {what}: arguments differ from rank 0's")


def _handle_of(p):
    fn = getattr(p, "_plm_handle", None)
    return fn() if fn is not None else None


def _plain(*arrays):
    return all(type(a) is DistributedArray and a.mask is None for a in arrays)


def _first(x):
    """x[0] for the tables (the first member of a stack; NaN on an empty local block)."""
    while isinstance(x, StackedDistributedArray):
        x = x.distarrays[0]
    a = x.local_array
    return float(np.real(a.flat[0])) if a.size else float("nan")


# --- a callback run from the library --------------------------------------------------------------
class _IterCallback:
    """What the library's per-iteration callback calls: callback(x) on a lent view of x."""

    def __init__(self, fn, comm):
        self.fn, self.comm, self.exc = fn, comm, None

    def __call__(self, iteration, xh, cost):
        x = DistributedArray._borrow(xh, self.comm)
        try:
            self.fn(x)
        except Exception as e:  # noqa: B902 - stops the solve; agreed after it
            e.__plm_traceback__ = traceback.format_exc()
            self.exc = e
            raise
        finally:
            x._release()


def _run_native(comm, callback, solve):
    """solve(info) with an info object carrying the callback; the callback's failure agreed."""
    cb = _IterCallback(callback, comm) if callback is not None else None
    info = Handle("plm_solver_info_t", "plm_solver_info_destroy")
    with checks() as c:       # local set-up, agreed before the collective solve
        call(lib.plm_solver_info_create, info.ptr)
        if cb is not None:
            ctx = new_ctx(cb)
            try:
                call(lib.plm_solver_info_set_callback, info.h, lib._plm_py_plm_solver_callback_fn,
                     ctx, lib._plm_py_ctx_destroy)
            except Exception:
                lib._plm_py_ctx_destroy(ctx)        # the call failed: ctx stays ours
                raise
    try:
        agree(comm, c)
        solve(info.h)
    finally:
        info.destroy()
    if cb is not None:
        _raise_agreed(comm, cb.exc)


# --- ProximalGradient -----------------------------------------------------------------------------
def ProximalGradient(proxf, proxg, x0, epsg=1.0, tau=None, eta=1.0, niter=10, niterback=100,
                     acceleration=None, tol=None, callback=None, show=False, *, backtracking=False,
                     beta=0.5):
    """(Accelerated) proximal gradient for min f(x) + epsg g(x); returns x.

    PyLops-MPI's signature, with pyproximal's backtracking: tau None (or backtracking=True,
    keyword-only here) takes each step from pyproximal's line search (beta, at most niterback
    tries, starting from tau or 1), which needs f's value too. proxf needs a gradient (`grad`);
    epsg is a number or one value per iteration; acceleration is None, "None", "vandenberghe"
    or "fista" (else NotImplementedError); with tol, the iterations stop when
    |1 - J / J_old| < tol, J = f(x) + epsg g(x). callback(x) runs after every iteration."""
    comm = x0.base_comm
    with checks() as c:
        epsg = np.asarray(epsg, dtype=float).ravel()
        niter = int(niter)
        if acceleration not in _ACCEL:
            raise NotImplementedError("Acceleration should be None, vandenberghe or fista")
        if tau is None:    # pyproximal: backtracking from tau = 1
            backtracking, tau = True, 1.0
        tau, eta, beta, niterback = float(tau), float(eta), float(beta), int(niterback)
        if epsg.size != 1 and epsg.size < niter:
            raise ValueError(f"ProximalGradient: epsg has {epsg.size} values, niter is {niter}")
        if not (hasattr(proxf, "grad") and hasattr(proxg, "prox")):
            raise TypeError("ProximalGradient: proxf needs grad and proxg needs prox")
    agree(comm, c)
    hf, hg = _handle_of(proxf), _handle_of(proxg)
    native = (hf is not None and hg is not None and _plain(x0) and not show and 0 < eta <= 1
              and getattr(proxf, "hasgrad", False))
    if comm.allreduce(native, op=MPI.LAND):      # one way on every rank
        e = epsg if epsg.size == 1 or niter == 0 else epsg[:niter]
        e = np.ascontiguousarray(e[:1] if niter == 0 else e, dtype=np.float64)
        x = x0.copy()
        ep = ffi.cast("double *", ffi.from_buffer(e))
        t = float(tol) if tol is not None else 0.0
        if backtracking:
            _run_native(comm, callback, lambda info: call(
                lib.plm_solve_proximal_gradient_backtracking, hf, hg, x.handle, tau, beta,
                niterback, ep, e.size, eta, niter, _ACCEL[acceleration], t, ffi.NULL, info))
        else:
            _run_native(comm, callback, lambda info: call(
                lib.plm_solve_proximal_gradient, hf, hg, x.handle, tau, ep, e.size, eta, niter,
                _ACCEL[acceleration], t, info))
        return x
    _same_everywhere(comm, "ProximalGradient", [epsg, tau, eta, niter, str(acceleration),
                                                -1.0 if tol is None else float(tol), bool(show),
                                                bool(backtracking), beta, niterback])
    return _pg_python(proxf, proxg, x0, epsg, tau, eta, niter, niterback, acceleration, tol,
                      callback, show, hf is not None, hg is not None, backtracking, beta)


def _backtracking(y, tau, proxf, proxg, epsg, beta, niterback, cf, cg_):
    """pyproximal's line search from y: (x, tau)."""
    gr = cf(proxf.grad, y)
    fy = cf(proxf, y)
    x = None
    for _ in range(niterback):
        x = cg_(proxg.prox, y - gr * tau, epsg * tau)
        d = x - y
        ft = fy + _real_dot(gr, d) + (1.0 / (2.0 * tau)) * float(np.asarray(d.norm()).ravel()[0]) ** 2
        if cf(proxf, x) <= ft:
            break
        tau *= beta
    return x, tau


def _real_dot(a, b):
    return float(np.real(np.asarray(a.dot(b)).ravel()[0]))


def _pg_python(proxf, proxg, x0, epsg, tau, eta, niter, niterback, acceleration, tol, callback,
               show, f_native, g_native, backtracking=False, beta=0.5):
    """PyLops-MPI's iterations, table and stopping rule, over the package's arrays."""
    comm = x0.base_comm
    rank = comm.Get_rank()
    cf, cg_ = _caller(comm, f_native), _caller(comm, g_native)
    if epsg.size == 1:
        epsg_print = str(epsg[0])
        epsg = epsg[0] * np.ones(niter)
    else:
        epsg_print = "Multi"
    if show and rank == 0:
        tstart = time.time()
        # PyLops-MPI's header; with backtracking, PyProximal's line for it
        back = "backtrack = True\tbeta = %10e\n" % beta if backtracking else ""
        print("Accelerated Proximal Gradient\n"
              "---------------------------------------------------------\n"
              "Proximal operator (f): %s\n"
              "Proximal operator (g): %s\n"
              "%stau = %s\tepsg = %s\n"
              "niter = %d\ttol = %s\n"
              "niterback = %d\tacceleration = %s\n"
              % (proxf, proxg, back, str(tau), epsg_print, niter, str(tol), niterback, acceleration))
        print("   Itn       x[0]          f           g       J=f+eps*g       tau")
        sys.stdout.flush()
    t = 1.0
    x = x0.copy()
    y = x.copy()
    pfg = np.inf
    pf = pg = np.nan
    for iiter in range(niter):
        xold = x.copy()
        if backtracking:
            x, tau = _backtracking(y, tau, proxf, proxg, epsg[iiter], beta, niterback, cf, cg_)
            if eta != 1.0:
                x = x + eta * (cg_(proxg.prox, x - tau * cf(proxf.grad, x), epsg[iiter] * tau) - x)
        elif eta == 1.0:
            x = cg_(proxg.prox, y - tau * cf(proxf.grad, y), epsg[iiter] * tau)
        else:
            x = x + eta * (cg_(proxg.prox, x - tau * cf(proxf.grad, x), epsg[iiter] * tau) - x)
        if acceleration == "vandenberghe":
            omega = iiter / (iiter + 3)
        elif acceleration == "fista":
            told = t
            t = (1.0 + np.sqrt(1.0 + 4.0 * t ** 2)) / 2.0
            omega = (told - 1.0) / t
        else:
            omega = 0
        y = x + omega * (x - xold)
        if callback is not None:
            _guarded(comm, callback, x)
        tolbreak = False
        if tol is not None:
            pfgold = pfg
            pf, pg = cf(proxf, x), cg_(proxg, x)
            pfg = pf + np.sum(epsg[iiter] * pg)
            tolbreak = bool(np.abs(1.0 - pfg / pfgold) < tol)
        if show and (iiter < 10 or niter - iiter < 10 or iiter % (niter // 10) == 0):
            if tol is None:
                pf, pg = cf(proxf, x), cg_(proxg, x)
                pfg = pf + np.sum(epsg[iiter] * pg)
            if rank == 0:
                print("%6g  %12.5e  %10.3e  %10.3e  %10.3e  %10.3e"
                      % (iiter + 1, _first(x), pf, pg, pfg, tau))
                sys.stdout.flush()
        if tolbreak:
            break
    if show and rank == 0:
        print("\nTotal time (s) = %.2f" % (time.time() - tstart))
        print("---------------------------------------------------------\n")
        sys.stdout.flush()
    return x


# --- ADMML2 ---------------------------------------------------------------------------------------
def ADMML2(proxg, Op, b, A, x0, tau, niter=10, z0=None, gfirst=False, callback=None, show=False,
           kwargs_solver={}):  # noqa: B006 - PyLops-MPI's signature (never modified here)
    """ADMM for min 0.5 ||Op x - b||^2 + g(z) subject to A x = z; returns (x, z).

    Each iteration solves [Op; A / sqrt(tau)] x = [b; (z - u) / sqrt(tau)] with cgls (warm
    started, **kwargs_solver: niter 10 and tol 1e-4 by default), then z = proxg.prox(A x + u, tau)
    (gfirst: the z-step first) and u = u + A x - z. z0 defaults to A x0."""
    if x0 is None:
        raise ValueError("x0 must be provided when A is also provided")
    comm = x0.base_comm
    with checks() as c:
        tau, niter = float(tau), int(niter)
        kw = dict(kwargs_solver) if kwargs_solver else {}
        if not hasattr(proxg, "prox"):
            raise TypeError("ADMML2: proxg needs prox")
    agree(comm, c)
    hg = _handle_of(proxg)
    base = hg is not None and not show and set(kw) <= {"niter", "tol"} and _plain(b, x0) and _plain_op(Op)
    plain = base and _plain_op(A) and (z0 is None or _plain(z0))
    # A stacked (A = MPIGradient, sqrt(2) * MPIGradient, ...): plm_solve_admml2_stacked, for a g
    # the library applies to stacks
    stacked = base and not plain and _stacked_a(A, z0) and getattr(
        getattr(proxg, "proxop", proxg), "_stacked_in_c", False)
    if comm.allreduce(plain, op=MPI.LAND):      # one way on every rank
        return _admm_native(hg, Op, b, A, x0, z0, tau, niter, gfirst, callback,
                            int(kw.get("niter", 10)), float(kw.get("tol", 1e-4)))
    if comm.allreduce(stacked, op=MPI.LAND):
        return _admm_native_stacked(hg, Op, b, A, x0, z0, tau, niter, gfirst, callback,
                                    int(kw.get("niter", 10)), float(kw.get("tol", 1e-4)))
    _same_everywhere(comm, "ADMML2", [tau, niter, bool(gfirst), bool(show)])
    return _admm_python(proxg, Op, b, A, x0, tau, niter, z0, gfirst, callback, show, kw,
                        hg is not None)


def _plain_op(op):
    from ..LinearOperator import _parts
    h = getattr(op, "handle", None)
    return h is not None and op._dtree is None and op._rtree is None and _parts(h) == (1, 1)


def _stacked_a(A, z0):
    """A library operator taking one array to a stack, and z0 None or a stack of as many
    DistributedArrays (nested or not)."""
    from ..LinearOperator import _leaves, _parts
    h = getattr(A, "handle", None)
    if h is None or A._dtree is not None or A._rtree is None:
        return False
    nd, nr = _parts(h)
    return nd == 1 and (z0 is None or (isinstance(z0, StackedDistributedArray)
                                        and len(_leaves(z0)) == nr and _plain(*_leaves(z0))))


def _admm_native(hg, Op, b, A, x0, z0, tau, niter, gfirst, callback, inner_niter, inner_tol):
    from ..LinearOperator import _conform, _layout_of, _new_on
    comm = Op.base_comm
    dt = np.dtype(Op.dtype)
    x = _conform(x0, _layout_of(lib.plm_op_domain, Op.handle), dt, comm)
    x = x.copy() if x is x0 else x
    bb = _conform(b, _layout_of(lib.plm_op_range, Op.handle), dt, comm)
    zl = _layout_of(lib.plm_op_range, A.handle)
    if z0 is not None:
        z = _conform(z0, zl, np.dtype(A.dtype), comm)
        z = z.copy() if z is z0 else z
    else:
        z = _new_on(zl, np.dtype(A.dtype), comm)
    _run_native(comm, callback, lambda info: call(
        lib.plm_solve_admml2, hg, Op.handle, bb.handle, A.handle, x.handle, z.handle,
        int(z0 is not None), tau, niter, int(bool(gfirst)), inner_niter, inner_tol, info))
    return x, z


def _admm_native_stacked(hg, Op, b, A, x0, z0, tau, niter, gfirst, callback, inner_niter, inner_tol):
    """ADMML2 in the library with z a stack (plm_solve_admml2_stacked): z has A's nesting."""
    from ..LinearOperator import _conform, _layout_of, _new_on, _io_of, _leaves, _build, _stack_handle
    comm = Op.base_comm
    dt = np.dtype(Op.dtype)
    x = _conform(x0, _layout_of(lib.plm_op_domain, Op.handle), dt, comm)
    x = x.copy() if x is x0 else x
    bb = _conform(b, _layout_of(lib.plm_op_range, Op.handle), dt, comm)
    adt = np.dtype(A.dtype)
    zs = []
    for i, lay in enumerate(_io_of(A).range):
        if z0 is not None:
            m = _leaves(z0)[i]
            c = _conform(m, lay.handle, adt, comm)
            zs.append(c.copy() if c is m else c)
        else:
            zs.append(_new_on(lay.handle, adt, comm))
    zh = _stack_handle(StackedDistributedArray(zs, base_comm=comm))
    try:
        _run_native(comm, callback, lambda info: call(
            lib.plm_solve_admml2_stacked, hg, Op.handle, bb.handle, A.handle, x.handle, zh.h,
            int(z0 is not None), tau, niter, int(bool(gfirst)), inner_niter, inner_tol, info))
    finally:
        zh.destroy()
    return x, _build(A._rtree, zs, comm)


def _admm_python(proxg, Op, b, A, x0, tau, niter, z0, gfirst, callback, show, kw, g_native):
    """PyLops-MPI's iterations and table, over the package's operators, arrays and cgls."""
    from ..basicoperators import MPIStackedVStack
    from ..optimization import cgls
    comm = x0.base_comm
    rank = comm.Get_rank()
    cg_ = _caller(comm, g_native)
    x, z = x0, (z0 if z0 is not None else A @ x0)
    u = z.zeros_like()
    if show and rank == 0:
        tstart = time.time()
        print("ADMM\n"
              "---------------------------------------------------------\n"
              "Proximal operator (g): %s\n"
              "tau = %10e\tniter = %d\n" % (proxg, tau, niter))
        print("   Itn       x[0]          f           g       J = f + g")
        sys.stdout.flush()
    sqrttau = 1.0 / sqrt(tau)
    Opreg = MPIStackedVStack([Op, sqrttau * A])
    for iiter in range(niter):
        if gfirst:
            Ax = A @ x
            z = cg_(proxg.prox, Ax + u, tau)
            breg = StackedDistributedArray([b, sqrttau * (z - u)])
            x = cgls(Opreg, breg, x0=x, **kw)[0]
        else:
            breg = StackedDistributedArray([b, sqrttau * (z - u)])
            x = cgls(Opreg, breg, x0=x, **kw)[0]
            Ax = A @ x
            z = cg_(proxg.prox, Ax + u, tau)
        u = u + Ax - z
        if callback is not None:
            _guarded(comm, callback, x)
        if show and (iiter < 10 or niter - iiter < 10 or iiter % (niter // 10) == 0):
            pf, pg = 0.5 * float(np.asarray((Op @ x - b).norm()).item()) ** 2, cg_(proxg, Ax)
            if rank == 0:
                print("%6g  %12.5e  %10.3e  %10.3e  %10.3e" % (iiter + 1, _first(x), pf, pg, pf + pg))
                sys.stdout.flush()
    if show and rank == 0:
        print("\nTotal time (s) = %.2f" % (time.time() - tstart))
        print("---------------------------------------------------------\n")
        sys.stdout.flush()
    return x, z
