"""Solvers with PyLops-MPI's signatures, return values, stopping rules and show=True tables.

The class forms (CG, CGLS, ISTA, FISTA: setup/step/run/finalize/solve) run in Python over the
array operations (each of which runs in the library). The functions cg and cgls call the library's
solver in one go when they can (an operator of this package, DistributedArray x0 and y, show=False,
no callback); otherwise they use the class forms. Both follow PyLops-MPI's iterations.
"""
import time

import numpy as np
from mpi4py import MPI

from .._core import ffi, lib, call, Handle
from ..DistributedArray import DistributedArray, StackedDistributedArray

__all__ = ["CG", "CGLS", "ISTA", "FISTA", "cg", "cgls", "ista", "fista", "power_iteration"]


class _Solver:
    def __init__(self, Op, callbacks=None):
        self.Op = Op
        self.callbacks = callbacks
        self.tstart = time.time()

    def _print_solver(self, text="", nbar=80):
        print(f"{type(self).__name__}" + text)
        print("-" * nbar + "\n" f"The Operator Op has {self.Op.shape[0]} rows and {self.Op.shape[1]} cols")

    def _print_finalize(self, nbar=80):
        print(f"\nIterations = {self.iiter}        Total time (s) = {self.telapsed:.2f}")
        print("-" * nbar + "\n")

    def callback(self, x, *args, **kwargs):
        """Called after every step by run(); replace it (solver.callback = f)."""

    @staticmethod
    def _showstep(show, iiter, niter, itershow):
        return bool(show and (iiter < itershow[0] or niter - iiter < itershow[1]
                              or iiter % itershow[2] == 0))

    @staticmethod
    def _first(x):
        return x.distarrays[0] if isinstance(x, StackedDistributedArray) else x

    @staticmethod
    def _iscomplex(x):
        if isinstance(x, StackedDistributedArray):
            return any(np.iscomplexobj(d.local_array) for d in x.distarrays)
        return np.iscomplexobj(x.local_array)


def _scalar(v):
    return np.asarray(v).item()


class CG(_Solver):
    """Conjugate gradient for a square Hermitian positive definite Op."""

    def _print_setup(self, xcomplex=False):
        self._print_solver(nbar=55)
        print(f"tol = {self.tol:10e}\tniter = {self.niter}" if self.niter is not None
              else f"tol = {self.tol:10e}")
        print("-" * 55 + "\n")
        print("    Itn              x[0]                  r2norm" if xcomplex
              else "    Itn           x[0]              r2norm")

    def _print_step(self, x):
        x = self._first(x)
        strx = f"{x[0]:1.2e}        " if np.iscomplexobj(x.local_array) else f"{x[0]:11.4e}        "
        print(f"{self.iiter:6g}        " + strx + f"{self.cost[self.iiter]:11.4e}")

    def setup(self, y, x0, niter=None, tol=1e-4, show=False):
        self.y, self.niter, self.tol = y, niter, tol
        x = x0.copy()
        self.r = self.y - self.Op.matvec(x)
        self.rank = x.rank
        self.c = self.r.copy()
        self.kold = abs(_scalar(self.r.dot(self.r.conj())))
        self.cost = [float(np.sqrt(self.kold))]
        self.iiter = 0
        if show and self.rank == 0:
            self._print_setup(self._iscomplex(x))
        return x

    def step(self, x, show=False):
        Opc = self.Op.matvec(self.c)
        a = self.kold / abs(_scalar(self.c.dot(Opc.conj())))
        x += self.c * a
        self.r -= Opc * a
        k = abs(_scalar(self.r.dot(self.r.conj())))
        b = k / self.kold
        self.c = self.r + self.c * b
        self.kold = k
        self.iiter += 1
        self.cost.append(float(np.sqrt(self.kold)))
        if show and self.rank == 0:
            self._print_step(x)
        return x

    def run(self, x, niter=None, show=False, itershow=(10, 10, 10)):
        niter = self.niter if niter is None else niter
        if niter is None:
            raise ValueError("niter must not be None")
        while self.iiter < niter and self.kold > self.tol:
            x = self.step(x, self._showstep(show, self.iiter, niter, itershow))
            self.callback(x)
        return x

    def finalize(self, show=False):
        self.tend = time.time()
        self.telapsed = self.tend - self.tstart
        self.cost = np.array(self.cost)
        if show and self.rank == 0:
            self._print_finalize(nbar=55)

    def solve(self, y, x0, niter=10, tol=1e-4, show=False, itershow=(10, 10, 10)):
        x = self.setup(y=y, x0=x0, niter=niter, tol=tol, show=show)
        x = self.run(x, niter, show=show, itershow=itershow)
        self.finalize(show)
        return x, self.iiter, self.cost


class CGLS(_Solver):
    """Conjugate gradient least squares: min ||y - Op x||^2 + damp^2 ||x||^2."""

    def _print_setup(self, xcomplex=False):
        self._print_solver(nbar=65)
        print(f"damp = {self.damp:10e}\ttol = {self.tol:10e}\tniter = {self.niter}"
              if self.niter is not None else f"damp = {self.damp:10e}\ttol = {self.tol:10e}\t")
        print("-" * 65 + "\n")
        print("    Itn             x[0]             r1norm         r2norm" if xcomplex
              else "    Itn          x[0]              r1norm         r2norm")

    def _print_step(self, x):
        x = self._first(x)
        strx = f"{x[0]:1.2e}   " if np.iscomplexobj(x.local_array) else f"{x[0]:11.4e}        "
        print(f"{self.iiter:6g}       " + strx
              + f"{self.cost[self.iiter]:11.4e}    {self.cost1[self.iiter]:11.4e}")

    def setup(self, y, x0, niter=None, damp=0.0, tol=1e-4, show=False):
        self.y, self.damp, self.tol, self.niter = y, damp ** 2, tol, niter
        x = x0.copy()
        self.s = self.y - self.Op.matvec(x)
        r = self.Op.rmatvec(self.s) - x * damp        # PyLops-MPI: unsquared damp here
        self.rank = x.rank
        self.c = r.copy()
        self.q = self.Op.matvec(self.c)
        self.kold = float(abs(_scalar(r.dot(r.conj()))))
        self.cost = [float(_scalar(self.s.norm()))]
        self.cost1 = [float(np.sqrt(self.cost[0] ** 2 + damp * abs(_scalar(x.dot(x.conj())))))]
        self.iiter = 0
        if show and self.rank == 0:
            self._print_setup(self._iscomplex(x))
        return x

    def step(self, x, show=False):
        den = _scalar(self.q.dot(self.q.conj())) + self.damp * _scalar(self.c.dot(self.c.conj()))
        a = float(abs(self.kold / den))
        x += self.c * a
        self.s -= self.q * a
        r = self.Op.rmatvec(self.s) - x * self.damp
        k = float(abs(_scalar(r.dot(r.conj()))))
        b = float(k / self.kold)
        self.c = r + self.c * b
        self.q = self.Op.matvec(self.c)
        self.kold = k
        self.iiter += 1
        self.cost.append(float(_scalar(self.s.norm())))
        self.cost1.append(float(np.sqrt(self.cost[self.iiter] ** 2
                                        + self.damp * abs(_scalar(x.dot(x.conj()))))))
        if show and self.rank == 0:
            self._print_step(x)
        return x

    run = CG.run

    def finalize(self, show=False, **kwargs):
        self.tend = time.time()
        self.telapsed = self.tend - self.tstart
        self.istop = 1 if self.kold < self.tol else 2
        self.r1norm = self.kold
        self.r2norm = self.cost1[self.iiter]
        if show and self.rank == 0:
            self._print_finalize(nbar=65)
        self.cost = np.array(self.cost)

    def solve(self, y, x0, niter=10, damp=0.0, tol=1e-4, show=False, itershow=(10, 10, 10)):
        x = self.setup(y=y, x0=x0, niter=niter, damp=damp, tol=tol, show=show)
        x = self.run(x, niter, show=show, itershow=itershow)
        self.finalize(show)
        return x, self.istop, self.iiter, self.r1norm, self.r2norm, self.cost


def _native_ok(Op, y, x0, show, callback, args_ok=True):
    """Collective: whether every rank can run the solve in the library (args_ok: the solver's
    own arguments allow it). The facts are local (a callback or show=True on one rank only), so
    the choice is agreed: one way on every rank."""
    ok = (Op.handle is not None and not show and callback is None and args_ok
          and type(y) is DistributedArray and type(x0) is DistributedArray
          and y.dtype == x0.dtype == np.dtype(Op.dtype))    # (mixed dtypes: the Python path promotes)
    return Op.base_comm.allreduce(bool(ok), op=MPI.LAND)


def _info_cost(info, n):
    cost = np.empty(n, dtype=np.float64)
    nw = ffi.new("int64_t *")
    call(lib.plm_solver_info_cost, info.h, ffi.cast("double *", ffi.from_buffer(cost)), n, nw)
    return cost[:nw[0]]


def _native_solve(Op, y, x0, niter, tol, damp=None):
    from ..LinearOperator import _conform, _direct, _io_of, _layout_of
    from ..DistributedArray import _Layout
    from .._core import check
    io = _io_of(Op)
    if io.out is not None:      # one domain and one range layout, known to the operator
        dom, ran = io.domain[0], io.range[0]
    else:                       # (plm_op_domain says why not)
        dom = _Layout(_layout_of(lib.plm_op_domain, Op.handle), Op.base_comm)
        ran = _Layout(_layout_of(lib.plm_op_range, Op.handle), Op.base_comm)
    dtype = io.dtype
    info = Handle("plm_solver_info_t", "plm_solver_info_destroy")
    call(lib.plm_solver_info_create, info.ptr)

    def solve(x, y):
        # a NULL x or y on a rank whose array needs converting fails the solve on every rank
        # (the library agrees before it starts) instead of leaving that rank out
        xh = x.handle if x is not None else ffi.NULL
        yh = y.handle if y is not None else ffi.NULL
        if damp is None:
            return lib.plm_solve_cg(Op.handle, yh, xh, int(niter), float(tol), info.h)
        return lib.plm_solve_cgls(Op.handle, yh, xh, int(niter), float(damp), float(tol), info.h)
    x = None
    if _direct(x0, dom, dtype):
        x = DistributedArray._on_layout(dom, dtype, io.code)
        call(lib.plm_array_copy, x0.handle, x.handle)
    st = solve(x, y if _direct(y, ran, dtype) else None)
    if st != lib.PLM_SUCCESS:
        try:
            check(st)
        except Exception as e:
            # every rank: agreed conversions, then the solve again (or the library's error when
            # nothing needed converting)
            xc = _conform(x0, dom.handle, Op.dtype, Op.base_comm)
            yc = _conform(y, ran.handle, Op.dtype, Op.base_comm)
            if xc is x0 and yc is y:
                raise e
            x = xc.copy() if xc is x0 else xc
            call(solve, x, yc)
    it, r1, r2 = ffi.new("int64_t *"), ffi.new("double *"), ffi.new("double *")
    call(lib.plm_solver_info_iterations, info.h, it)
    call(lib.plm_solver_info_norms, info.h, r1, r2)
    cost = _info_cost(info, it[0] + 1)
    info.destroy()
    return x, int(it[0]), r1[0], r2[0], cost


def cg(Op, y, x0, niter=10, tol=1e-4, show=False, itershow=(10, 10, 10), callback=None):
    """Conjugate gradient; returns (x, iit, cost)."""
    if _native_ok(Op, y, x0, show, callback):
        x, it, _, _, cost = _native_solve(Op, y, x0, niter, tol)
        return x, it, cost
    solver = CG(Op)
    if callback is not None:
        solver.callback = callback
    return solver.solve(y=y, x0=x0, tol=tol, niter=niter, show=show, itershow=itershow)


def cgls(Op, y, x0, niter=10, damp=0.0, tol=1e-4, show=False, itershow=(10, 10, 10), callback=None):
    """CGLS; returns (x, istop, iit, r1norm, r2norm, cost)."""
    if _native_ok(Op, y, x0, show, callback, damp == 0.0):
        x, it, r1, r2, cost = _native_solve(Op, y, x0, niter, tol, damp)
        return x, (1 if r1 < tol else 2), it, r1, r2, cost
    solver = CGLS(Op)
    if callback is not None:
        solver.callback = callback
    return solver.solve(y=y, x0=x0, tol=tol, niter=niter, damp=damp, show=show, itershow=itershow)


# --- sparsity ---------------------------------------------------------------------------------
def _map_local(x, fn):
    if isinstance(x, StackedDistributedArray):
        return StackedDistributedArray([_map_local(d, fn) for d in x.distarrays], base_comm=x.base_comm)
    out = x.empty_like()
    out.local_array[...] = fn(x.local_array)
    return out


def _soft(v, t):
    if np.iscomplexobj(v):
        return np.maximum(np.abs(v) - t, 0.0) * np.exp(1j * np.angle(v))
    return np.maximum(np.abs(v) - t, 0.0) * np.sign(v)


def _hard(v, t):
    out = v.copy()
    out[np.abs(v) <= np.sqrt(2 * t)] = 0.0
    return out


def _half(v, t):
    arg = np.ones_like(v)
    nz = v != 0
    arg[nz] = (t / 8.0) * (np.abs(v[nz]) / 3.0) ** (-1.5)
    if np.iscomplexobj(arg):
        arg.real = np.clip(arg.real, -1.0, 1.0)
        arg.imag = np.clip(arg.imag, -1.0, 1.0)
    else:
        arg = np.clip(arg, -1.0, 1.0)
    phi = 2.0 / 3.0 * np.arccos(arg)
    out = 2.0 / 3.0 * v * (1.0 + np.cos(2.0 * np.pi / 3.0 - phi))
    out[np.abs(v) <= (54.0 ** (1.0 / 3.0) / 4.0) * t ** (2.0 / 3.0)] = 0
    return out


_THRESH = {"soft": _soft, "hard": _hard, "half": _half}


class ISTA(_Solver):
    """Iterative shrinkage-thresholding (L1/L0/L1/2 regularisation)."""

    def _print_setup(self):
        self._print_solver(f" ({self.threshkind} thresholding)")
        print(f"eps = {self.eps:10e}\ttol = {self.tol:10e}\tniter = {self.niter}"
              if self.niter is not None else f"eps = {self.eps:10e}\ttol = {self.tol:10e}")
        print(f"alpha = {self.alpha:10e}\tthresh = {self.thresh:10e}")
        print("-" * 80)
        print("   Itn          x[0]              r2norm     r12norm     xupdate")

    def _print_step(self, x, costdata, costreg, xupdate):
        x = self._first(x)
        strx = f"  {x[0]:1.2e}   " if np.iscomplexobj(x.local_array) else f"     {x[0]:11.4e}        "
        print(f"{self.iiter:6g} " + strx + f"{costdata:10.3e}   {costdata + costreg:9.3e}  {xupdate:10.3e}")

    def setup(self, y, x0, niter=None, SOp=None, eps=0.1, alpha=None, eigsdict=None, tol=1e-10,
              threshkind="soft", decay=None, monitorres=False, show=False):
        if threshkind not in _THRESH:
            raise ValueError("threshkind must be hard, soft, half")
        self.y, self.SOp, self.niter, self.eps, self.tol = y, SOp, niter, eps, tol
        self.eigsdict = {} if eigsdict is None else eigsdict
        self.threshkind, self.monitorres = threshkind, monitorres
        self.threshf = _THRESH[threshkind]
        real = np.finfo(np.dtype(self.Op.dtype)).dtype
        self.decay = np.ones(niter, dtype=real) if decay is None else decay
        if alpha is not None:
            self.alpha = alpha
        else:
            Op1 = self.Op.H @ self.Op
            b = x0.copy()
            maxeig = np.abs(power_iteration(Op1, b, dtype=Op1.dtype, **self.eigsdict)[0])
            self.alpha = float(1.0 / maxeig)
        self.thresh = eps * self.alpha * 0.5
        x = x0.copy()
        self.rank = x.rank
        self.normresold = np.inf
        self.t = 1.0
        self.cost = []
        self.iiter = 0
        if show and self.rank == 0:
            self._print_setup()
        return x

    def _threshold(self, xunth):
        t = self.decay[self.iiter] * self.thresh
        if self.SOp is not None:
            return self.SOp.matvec(_map_local(self.SOp.rmatvec(xunth), lambda v: self.threshf(v, t)))
        return _map_local(xunth, lambda v: self.threshf(v, t))

    def _residual(self, x):
        res = self.y - self.Op.matvec(x)
        if self.monitorres:
            normres = float(_scalar(res.norm()))
            if normres > self.normresold:
                raise ValueError(f"ISTA stopped at iteration {self.iiter} due to residual "
                                 f"increasing, consider modifying eps and/or alpha...")
            self.normresold = normres
        return res

    def step(self, x, show=False):
        xold = x.copy()
        res = self._residual(x)
        x = self._threshold(x + self.Op.rmatvec(res) * self.alpha)
        xupdate = float(_scalar((x - xold).norm()))
        costdata = 0.5 * float(_scalar(res.norm())) ** 2
        costreg = self.eps * float(_scalar(x.norm(ord=1)))
        self.cost.append(float(costdata + costreg))
        self.iiter += 1
        if show and self.rank == 0:
            self._print_step(x, costdata, costreg, xupdate)
        return x, xupdate

    def run(self, x, niter=None, show=False, itershow=(10, 10, 10)):
        niter = self.niter if niter is None else niter
        if niter is None:
            raise ValueError("niter must not be None")
        xupdate = np.inf
        while self.iiter < niter and xupdate > self.tol:
            x, xupdate = self.step(x, self._showstep(show, self.iiter, niter, itershow))
            self.callback(x)
        return x

    def finalize(self, show=False):
        self.tend = time.time()
        self.telapsed = self.tend - self.tstart
        self.cost = np.array(self.cost)
        if show and self.rank == 0:
            self._print_finalize()

    def solve(self, y, x0, niter=None, SOp=None, eps=0.1, alpha=None, eigsdict=None, tol=1e-10,
              threshkind="soft", decay=None, monitorres=False, show=False, itershow=(10, 10, 10)):
        x = self.setup(y=y, x0=x0, niter=niter, SOp=SOp, eps=eps, alpha=alpha, eigsdict=eigsdict,
                       tol=tol, threshkind=threshkind, decay=decay, monitorres=monitorres, show=show)
        x = self.run(x, niter, show=show, itershow=itershow)
        self.finalize(show)
        return x, self.iiter, self.cost


class FISTA(ISTA):
    """Fast ISTA (Nesterov acceleration of ISTA)."""

    def setup(self, *args, **kwargs):
        x = super().setup(*args, **kwargs)
        self.z = x.copy()
        return x

    def step(self, x, show=False):
        xold = x.copy()
        res = self._residual(self.z)
        x = self._threshold(self.z + self.Op.rmatvec(res) * self.alpha)
        told = self.t
        self.t = (1.0 + np.sqrt(1.0 + 4.0 * self.t ** 2)) / 2.0
        self.z = x + (x - xold) * ((told - 1.0) / self.t)
        xupdate = float(_scalar((x - xold).norm()))
        costdata = 0.5 * float(_scalar((self.y - self.Op.matvec(x)).norm())) ** 2
        costreg = self.eps * float(_scalar(x.norm(ord=1)))
        self.cost.append(float(costdata + costreg))
        self.iiter += 1
        if show and self.rank == 0:
            self._print_step(x, costdata, costreg, xupdate)
        return x, xupdate


def _sparse(cls, Op, y, x0, niter, SOp, eps, alpha, eigsdict, tol, threshkind, decay, monitorres,
            show, itershow, callback):
    solver = cls(Op)
    if callback is not None:
        solver.callback = callback
    return solver.solve(y=y, x0=x0, niter=niter, SOp=SOp, eps=eps, alpha=alpha, eigsdict=eigsdict,
                        tol=tol, threshkind=threshkind, decay=decay, monitorres=monitorres,
                        show=show, itershow=itershow)


def ista(Op, y, x0, niter=10, SOp=None, eps=0.1, alpha=None, eigsdict=None, tol=1e-10,
         threshkind="soft", decay=None, monitorres=False, show=False, itershow=(10, 10, 10),
         callback=None):
    """ISTA; returns (x, niter, cost)."""
    return _sparse(ISTA, Op, y, x0, niter, SOp, eps, alpha, eigsdict, tol, threshkind, decay,
                   monitorres, show, itershow, callback)


def fista(Op, y, x0, niter=10, SOp=None, eps=0.1, alpha=None, eigsdict=None, tol=1e-10,
          threshkind="soft", decay=None, monitorres=False, show=False, itershow=(10, 10, 10),
          callback=None):
    """FISTA; returns (x, niter, cost)."""
    return _sparse(FISTA, Op, y, x0, niter, SOp, eps, alpha, eigsdict, tol, threshkind, decay,
                   monitorres, show, itershow, callback)


def _random_fill(b, rng, cmpx):
    """b's global vector drawn from rng, the same on every rank (so it does not depend on the
    rank count, and BROADCAST arrays stay equal on every rank)."""
    if isinstance(b, StackedDistributedArray):
        for d in b.distarrays:
            _random_fill(d, rng, cmpx)
        return
    shape = tuple(b.global_shape)
    g = rng.random(shape) + (1j * rng.random(shape) if cmpx and np.iscomplexobj(b.local_array) else 0)
    g = np.ascontiguousarray(g, dtype=b.dtype)
    call(lib.plm_array_set_global, b.handle, ffi.from_buffer(g) if g.nbytes else ffi.NULL, g.nbytes)


def power_iteration(Op, b_k, niter=10, tol=1e-5, dtype="float64", backend="numpy", seed=0):
    """Largest eigenvalue of Op by power iterations; returns (maxeig, b_k, iterations).
    b_k is overwritten with uniform random numbers and normalised. Unlike PyLops-MPI (a different
    unseeded draw on each rank), the start vector is one global draw from `seed`, the same at
    every rank count: results are reproducible (ISTA/FISTA's automatic step included)."""
    cmpx = np.iscomplexobj(np.ones(1, dtype=dtype))
    _random_fill(b_k, np.random.default_rng(seed), cmpx)
    b_k = b_k * (1.0 / float(_scalar(b_k.norm())))
    maxeig_old = 0.0
    iiter = 0
    for iiter in range(niter):
        b1 = Op.matvec(b_k)
        maxeig = _scalar(b_k.dot(b1, vdot=True))
        b_k = b1 * (1.0 / float(_scalar(b1.norm())))
        if np.abs(maxeig - maxeig_old) < tol * np.abs(maxeig):
            break
        maxeig_old = maxeig
    return maxeig, b_k, iiter + 1
