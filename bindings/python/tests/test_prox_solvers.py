"""Box, MPIL2 and the proximal solvers (ProximalGradient, ADMML2) against serial NumPy versions of
the same formulas and iterations, written here; uneven blocks per rank (rank r owns 2 + r
unknowns). Both ways the solvers run are checked: in the library (this package's proximal
operators) and in Python (user proximal objects, show=True)."""
import numpy as np
import pytest
import scipy.linalg as sl
from mpi4py import MPI

import pylopsmpi as pm
from pylopsmpi.proximal import Box, L1, MPIL2, MPIProxOperator, ProximalGradient, ADMML2

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
NS = [2 + r for r in range(size)]          # unknowns per rank (uneven)
MS = [3 + (r % 2) for r in range(size)]    # data per rank
N, M = sum(NS), sum(MS)
OFF = sum(NS[:rank])


def _vec(g, counts=None):
    """A SCATTER DistributedArray of the global vector g, rank r owning counts[r] entries."""
    counts = NS if counts is None else counts
    x = pm.DistributedArray(global_shape=len(g), local_shapes=[(c,) for c in counts], dtype=g.dtype)
    off = sum(counts[:rank])
    x.local_array[:] = g[off:off + counts[rank]]
    return x


def _rand(n, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    g = rng.standard_normal(n)
    if np.issubdtype(dtype, np.complexfloating):
        g = g + 1j * rng.standard_normal(n)
    return g.astype(dtype)


def _blockdiag(dtype=np.float64, seed=1, rows=None, cols=None, shift=2.0):
    """Each rank's block of one global seeded draw; the operator and its global matrix."""
    rows, cols = rows or MS, cols or NS
    rng = np.random.default_rng(seed)
    blocks = []
    for m, n in zip(rows, cols):
        B = rng.standard_normal((m, n)) + shift * np.eye(m, n)
        if np.issubdtype(dtype, np.complexfloating):
            B = B + 0.5j * rng.standard_normal((m, n))
        blocks.append(B.astype(dtype))
    return pm.MPIBlockDiag([blocks[rank]]), sl.block_diag(*blocks)


def _soft(v, t):
    if np.iscomplexobj(v):
        return np.maximum(np.abs(v) - t, 0) * np.exp(1j * np.angle(v))
    return np.maximum(np.abs(v) - t, 0) * np.sign(v)


def _same_class_everywhere(e):
    names = comm.allgather(type(e.value).__name__)
    assert len(set(names)) == 1, names


# --- NumPy versions of the inner solvers (PyLops-MPI's cg / cgls iterations) ----------------------
def np_cg(Aop, y, x, niter, tol):
    x = x.copy()
    r = y - Aop @ x
    c = r.copy()
    kold = abs(np.vdot(r, r))
    it = 0
    while it < niter and kold > tol:
        Ac = Aop @ c
        a = kold / abs(np.vdot(c, Ac))
        x = x + a * c
        r = r - a * Ac
        k = abs(np.vdot(r, r))
        c = r + (k / kold) * c
        kold = k
        it += 1
    return x


def np_cgls(Aop, y, x, niter, tol):
    x = x.copy()
    s = y - Aop @ x
    r = Aop.conj().T @ s
    c = r.copy()
    q = Aop @ c
    kold = abs(np.vdot(r, r))
    it = 0
    while it < niter and kold > tol:
        a = kold / abs(np.vdot(q, q))
        x = x + a * c
        s = s - a * q
        r = Aop.conj().T @ s
        k = abs(np.vdot(r, r))
        c = r + (k / kold) * c
        q = Aop @ c
        kold = k
        it += 1
    return x


def np_l2_prox(A, b, q, sigma, alpha, x, tau, x0, niter, tol, solver):
    ts = tau * sigma
    qq = np.zeros_like(x) if q is None else q
    if solver == "cg":
        Aop = np.eye(A.shape[1]) + ts * (A.conj().T @ A)
        return np_cg(Aop, x + tau * sigma * (A.conj().T @ b) - tau * alpha * qq, x0, niter, tol)
    Aop = np.vstack([np.sqrt(ts) * A, np.eye(A.shape[1])])
    return np_cgls(Aop, np.concatenate([np.sqrt(ts) * b, x - tau * alpha * qq]), x0, niter, tol)


# --- Box ------------------------------------------------------------------------------------------
def test_box_prox_value_and_wrappers():
    g = _rand(N, seed=3)
    x = _vec(g)
    box = Box(-0.5, 0.25)
    np.testing.assert_array_equal(box.prox(x, 0.3).asarray(), np.clip(g, -0.5, 0.25))
    assert box(x) is False
    inside = _vec(np.clip(g, -0.5, 0.25))
    assert box(inside) is True
    # only the last rank's block leaves the box: the AND over the ranks sees it everywhere
    h = np.clip(g, -0.5, 0.25)
    h[-1] = 7.0
    assert box(_vec(h)) is False
    assert Box()(x) is True                     # default: no bounds
    # PyLops-MPI's MPIProxOperator over a pyproximal-like Box (by class name, scalar bounds)
    PyBox = type("Box", (), {"lower": -0.5, "upper": 0.25, "hasgrad": False})
    P = MPIProxOperator(PyBox())
    np.testing.assert_array_equal(P.prox(x, 1.0).asarray(), np.clip(g, -0.5, 0.25))
    assert P(pm.StackedDistributedArray([inside, inside])) is True
    assert P(pm.StackedDistributedArray([inside, x])) is False
    with pytest.raises(NotImplementedError):
        Box(np.zeros(3), 1.0)
    with pytest.raises(NotImplementedError):
        MPIProxOperator(type("Huber", (), {})())


def test_box_empty_block_and_complex():
    counts = [0 if r == size - 1 and size > 1 else 3 for r in range(size)]
    g = _rand(sum(counts), seed=4)
    x = _vec(g, counts)
    np.testing.assert_array_equal(Box(0, 1).prox(x, 1.0).asarray(), np.clip(g, 0, 1))
    assert Box(0, 1)(x) == bool(np.all((g >= 0) & (g <= 1)))
    with pytest.raises(pm.DtypeMismatchError) as e:
        Box(0, 1).prox(_vec(_rand(N, np.complex128)), 1.0)
    _same_class_everywhere(e)


# --- MPIL2 ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_l2_closed_forms(dtype):
    x, b, q = _rand(N, dtype, 5), _rand(N, dtype, 6), _rand(N, dtype, 7)
    xd, bd, qd = _vec(x), _vec(b), _vec(q)
    sigma, alpha, tau = 0.7, 0.3, 1.9
    cases = [(None, None), (bd, None), (None, qd), (bd, qd)]
    for bb, qq in cases:
        f = MPIL2(b=bb, q=qq, sigma=sigma, alpha=alpha)
        bn = b if bb is not None else np.zeros_like(x)
        qn = q if qq is not None else np.zeros_like(x)
        ref = (x + tau * sigma * bn - tau * alpha * qn) / (1 + tau * sigma)
        np.testing.assert_allclose(f.prox(xd, tau).asarray(), ref, rtol=1e-13)
        val = sigma / 2 * np.linalg.norm(x - bn) ** 2 + alpha * np.real(np.sum(qn * x))
        assert np.isclose(f(xd), val, rtol=1e-12)
        np.testing.assert_allclose(f.grad(xd).asarray(), sigma * (x - bn) + alpha * qn, rtol=1e-13)
        assert f.hasgrad
        fq = MPIL2(b=bb, q=qq, sigma=sigma, alpha=alpha, qgrad=False)
        np.testing.assert_allclose(fq.grad(xd).asarray(), sigma * (x - bn), rtol=1e-13)
    # Moreau: prox of the conjugate of sigma/2 ||.||^2 is x / (1 + tau / sigma)
    np.testing.assert_allclose(MPIL2(sigma=sigma).proxdual(xd, tau).asarray(), x / (1 + tau / sigma),
                               rtol=1e-12)


@pytest.mark.parametrize("solver", ["cg", "cgls"])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_l2_with_operator(solver, dtype):
    Op, A = _blockdiag(dtype)
    xt, x0g, q = _rand(N, dtype, 8), _rand(N, dtype, 9), _rand(N, dtype, 10)
    b = A @ xt + 0.1 * _rand(M, dtype, 11)
    bd, x0d, qd = _vec(b, MS), _vec(x0g), _vec(q)
    xin = _rand(N, dtype, 12)
    xd = _vec(xin)
    sigma, alpha, tau = 1.3, 0.4, 0.8
    # value and gradient
    f = MPIL2(Op=Op, b=bd, q=qd, sigma=sigma, alpha=alpha, x0=x0d, solver=solver,
              kwargs_solver={"tol": 0.0}, niter=2)
    r = A @ xin - b
    assert np.isclose(f(xd), sigma / 2 * np.linalg.norm(r) ** 2 + alpha * np.real(np.sum(q * xin)),
                      rtol=1e-12)
    np.testing.assert_allclose(f.grad(xd).asarray(), sigma * A.conj().T @ r + alpha * q, rtol=1e-12)
    # two iterations (N >= 2) of the inner solver from x0, then warm starts from the last solution
    p1 = f.prox(xd, tau)
    ref1 = np_l2_prox(A, b, q, sigma, alpha, xin, tau, x0g, 2, 0.0, solver)
    np.testing.assert_allclose(p1.asarray(), ref1, rtol=1e-10)
    p2 = f.prox(xd, tau)
    ref2 = np_l2_prox(A, b, q, sigma, alpha, xin, tau, ref1, 2, 0.0, solver)
    np.testing.assert_allclose(p2.asarray(), ref2, rtol=1e-10)
    assert f.count == 2
    # no warm start: always from x0
    fc = MPIL2(Op=Op, b=bd, q=qd, sigma=sigma, alpha=alpha, x0=x0d, solver=solver, warm=False,
               kwargs_solver={"tol": 0.0}, niter=2)
    fc.prox(xd, tau)
    np.testing.assert_allclose(fc.prox(xd, tau).asarray(), ref1, rtol=1e-10)
    # converged: the solution of (I + tau sigma A^H A) x = xin + tau sigma A^H b - tau alpha q
    fs = MPIL2(Op=Op, b=bd, q=qd, sigma=sigma, alpha=alpha, x0=x0d, solver=solver, niter=200,
               kwargs_solver={"tol": 1e-28})
    exact = np.linalg.solve(np.eye(N) + tau * sigma * A.conj().T @ A,
                            xin + tau * sigma * A.conj().T @ b - tau * alpha * q)
    np.testing.assert_allclose(fs.prox(xd, tau).asarray(), exact, rtol=1e-8, atol=1e-10)


def test_l2_niter_function_and_reference_rules():
    Op, A = _blockdiag()
    b = A @ _rand(N, seed=13)
    x0g, xin = _rand(N, seed=14), _rand(N, seed=15)
    bd, x0d, xd = _vec(b, MS), _vec(x0g), _vec(xin)
    tau = 0.5
    # niter as a function of the call count (1, 2, 1 iterations), warm started
    f = MPIL2(Op=Op, b=bd, x0=x0d, niter=lambda k: 2 - k % 2, kwargs_solver={"tol": 0.0})
    assert f._plm_handle() is None       # the solvers run it from Python
    start = x0g
    for k in (1, 2, 1):
        ref = np_l2_prox(A, b, None, 1.0, 1.0, xin, tau, start, k, 0.0, "cgls")
        np.testing.assert_allclose(f.prox(xd, tau).asarray(), ref, rtol=1e-10)
        start = ref
    np.testing.assert_allclose(f.x0.asarray(), start, rtol=1e-10)
    # PyLops-MPI ignores Op without b (closed form without b)
    g = MPIL2(Op=Op, x0=x0d, sigma=2.0)
    np.testing.assert_allclose(g.prox(xd, tau).asarray(), xin / (1 + tau * 2.0), rtol=1e-13)
    with pytest.raises(ValueError):
        MPIL2(Op=Op, b=bd)                     # x0 is required with Op
    with pytest.raises(ValueError):
        MPIL2(solver="lsqr")
    with pytest.raises(TypeError):                 # not an argument of cgls / cg
        MPIL2(Op=Op, b=bd, x0=x0d, kwargs_solver={"lsqr_atol": 1.0})
    with pytest.raises(TypeError):                 # cg takes no damp
        MPIL2(Op=Op, b=bd, x0=x0d, solver="cg", kwargs_solver={"damp": 1.0})
    with pytest.raises(ValueError):            # pyproximal's tau check (agreed in the library)
        MPIL2().prox(xd, -1.0)


# --- ProximalGradient -----------------------------------------------------------------------------
def np_proximal_gradient(A, b, sigma, x0, tau, epsg, eta, niter, acceleration, tol):
    """PyLops-MPI's iterations for f = 0.5 ||A x - b||^2, g = sigma ||x||_1; returns (x, its)."""
    epsg = np.asarray(epsg, dtype=float).ravel()
    epsg = epsg[0] * np.ones(niter) if epsg.size == 1 else epsg
    grad = lambda v: A.conj().T @ (A @ v - b)
    x, y, t, pfg = x0.copy(), x0.copy(), 1.0, np.inf
    for it in range(niter):
        xold = x.copy()
        if eta == 1.0:
            x = _soft(y - tau * grad(y), epsg[it] * tau * sigma)
        else:
            x = x + eta * (_soft(x - tau * grad(x), epsg[it] * tau * sigma) - x)
        if acceleration == "vandenberghe":
            omega = it / (it + 3)
        elif acceleration == "fista":
            told = t
            t = (1 + np.sqrt(1 + 4 * t ** 2)) / 2
            omega = (told - 1) / t
        else:
            omega = 0
        y = x + omega * (x - xold)
        if tol is not None:
            pfgold = pfg
            pfg = 0.5 * np.linalg.norm(A @ x - b) ** 2 + epsg[it] * sigma * np.sum(np.abs(x))
            if np.abs(1 - pfg / pfgold) < tol:
                return x, it + 1
    return x, niter


class UserL1:
    """A user proximal object on DistributedArrays (what a PyLops-MPI user may write)."""

    def __init__(self, sigma):
        self.sigma = sigma
        self.hasgrad = False

    def __call__(self, x):
        return self.sigma * float(x.norm(ord=1))

    def prox(self, x, tau):
        out = x.empty_like()
        out.local_array[:] = _soft(x.local_array, tau * self.sigma)
        return out


class UserL2:
    """0.5 ||Op x - b||^2 with grad, in Python."""

    def __init__(self, Op, b):
        self.Op, self.b = Op, b

    def __call__(self, x):
        return 0.5 * float((self.Op @ x - self.b).norm()) ** 2

    def grad(self, x):
        return self.Op.H @ (self.Op @ x - self.b)


_PG_CASES = [
    dict(acceleration=None), dict(acceleration="None"), dict(acceleration="vandenberghe"),
    dict(acceleration="fista"), dict(acceleration="fista", eta=0.6), dict(acceleration=None, eta=0.6),
    dict(acceleration="fista", epsg="vector"), dict(acceleration="vandenberghe", tol=2e-3),
    dict(acceleration=None, tol=5e-3, eta=0.8),
]


@pytest.mark.parametrize("case", _PG_CASES)
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_proximal_gradient(case, dtype):
    Op, A = _blockdiag(dtype, seed=20)
    xt = np.zeros(N, dtype)
    xt[::3] = 1.0
    b = A @ xt
    x0g = _rand(N, dtype, 21)
    bd, x0d = _vec(b, MS), _vec(x0g)
    tol = case.get("tol")
    niter, sigma = (100 if tol else 40), 0.2
    tau = 0.9 / np.linalg.norm(A, 2) ** 2
    eta = case.get("eta", 1.0)
    epsg = np.linspace(1.0, 0.5, niter) if case.get("epsg") == "vector" else 0.7
    acc = case["acceleration"]
    ref, its = np_proximal_gradient(A, b, sigma, x0g, tau, epsg, eta, niter, acc, tol)
    if tol is not None:
        assert its < niter                     # the tolerance is exercised
    kw = dict(epsg=epsg, tau=tau, eta=eta, niter=niter, acceleration=acc, tol=tol)
    seen = []
    # in the library
    x = ProximalGradient(MPIL2(Op=Op, b=bd, x0=x0d), MPIProxOperator(L1(sigma)), x0d,
                         callback=lambda v: seen.append(v.asarray()), **kw)
    assert isinstance(x, pm.DistributedArray)
    np.testing.assert_allclose(x.asarray(), ref, rtol=1e-10, atol=1e-12)
    assert len(seen) == its
    np.testing.assert_allclose(seen[-1], ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(x0d.asarray(), x0g)           # x0 untouched
    # in Python: user objects
    xu = ProximalGradient(UserL2(Op, bd), UserL1(sigma), x0d, **kw)
    np.testing.assert_allclose(xu.asarray(), ref, rtol=1e-10, atol=1e-12)


def test_proximal_gradient_show_table(capsys):
    Op, A = _blockdiag(seed=22)
    b = A @ np.ones(N)
    x0g = np.zeros(N)
    bd, x0d = _vec(b, MS), _vec(x0g)
    tau = 0.9 / np.linalg.norm(A, 2) ** 2
    ref, _ = np_proximal_gradient(A, b, 0.1, x0g, tau, 1.0, 1.0, 25, "fista", None)
    x = ProximalGradient(MPIL2(Op=Op, b=bd, x0=x0d), L1(0.1), x0d, tau=tau, niter=25,
                         acceleration="fista", show=True)
    np.testing.assert_allclose(x.asarray(), ref, rtol=1e-10)
    out = capsys.readouterr().out
    if rank == 0:
        assert "Accelerated Proximal Gradient" in out and "J=f+eps*g" in out
        assert len([ln for ln in out.splitlines() if ln.strip().startswith("25 ")]) == 1
    else:
        assert out == ""


# --- ADMML2 ---------------------------------------------------------------------------------------
def np_admml2(A, b, R, sigma, x0, z0, tau, niter, gfirst, inner_niter=10, inner_tol=1e-4):
    x = x0.copy()
    z = R @ x0 if z0 is None else z0.copy()
    u = np.zeros_like(z)
    s = 1 / np.sqrt(tau)
    M = np.vstack([A, s * R])

    def xstep(x):
        return np_cgls(M, np.concatenate([b, s * (z - u)]), x, inner_niter, inner_tol)
    for _ in range(niter):
        if gfirst:
            Ax = R @ x
            z = _soft(Ax + u, tau * sigma)
            x = xstep(x)
        else:
            x = xstep(x)
            Ax = R @ x
            z = _soft(Ax + u, tau * sigma)
        u = u + Ax - z
    return x, z


@pytest.mark.parametrize("gfirst", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_admml2(gfirst, dtype):
    Op, A = _blockdiag(dtype, seed=30)
    Rop, R = _blockdiag(dtype, seed=31, rows=NS, cols=NS, shift=3.0)
    xt = np.zeros(N, dtype)
    xt[1::2] = 1.0
    b = A @ xt
    x0g = _rand(N, dtype, 32)
    bd, x0d = _vec(b, MS), _vec(x0g)
    sigma, tau, niter = 0.3, 0.7, 12
    xr, zr = np_admml2(A, b, R, sigma, x0g, None, tau, niter, gfirst)
    seen = []
    x, z = ADMML2(L1(sigma), Op, bd, Rop, x0d, tau, niter=niter, gfirst=gfirst,
                  callback=lambda v: seen.append(1))
    np.testing.assert_allclose(x.asarray(), xr, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(z.asarray(), zr, rtol=1e-9, atol=1e-11)
    assert len(seen) == niter
    np.testing.assert_allclose(x0d.asarray(), x0g)
    # z0 given, other inner solver settings; in the library and in Python (user proxg)
    z0g = _rand(N, dtype, 33)
    z0d = _vec(z0g)
    # (tol 0: at most N inner iterations, past convergence CGLS divides rounding errors)
    xr, zr = np_admml2(A, b, R, sigma, x0g, z0g, tau, niter, gfirst, inner_niter=2, inner_tol=0.0)
    kw = {"niter": 2, "tol": 0.0}
    for g in (MPIProxOperator(L1(sigma)), UserL1(sigma)):
        x, z = ADMML2(g, Op, bd, Rop, x0d, tau, niter=niter, z0=z0d, gfirst=gfirst, kwargs_solver=kw)
        np.testing.assert_allclose(x.asarray(), xr, rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(z.asarray(), zr, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(z0d.asarray(), z0g)


def test_admml2_show_python_path(capsys):
    Op, A = _blockdiag(seed=34)
    Rop, R = _blockdiag(seed=35, rows=NS, cols=NS, shift=3.0)
    b = A @ np.ones(N)
    x0g = np.zeros(N)
    xr, zr = np_admml2(A, b, R, 0.2, x0g, None, 1.0, 6, False)
    x, z = ADMML2(L1(0.2), Op, _vec(b, MS), Rop, _vec(x0g), 1.0, niter=6, show=True)
    np.testing.assert_allclose(x.asarray(), xr, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(z.asarray(), zr, rtol=1e-9, atol=1e-11)
    out = capsys.readouterr().out
    assert ("J = f + g" in out) == (rank == 0)


# --- bad arguments on one rank: the same exception class on every rank ---------------------------
def _pg_problem():
    Op, A = _blockdiag(seed=40)
    b = A @ np.ones(N)
    return Op, _vec(b, MS), _vec(np.zeros(N))


@pytest.mark.parametrize("user", [False, True])
def test_bad_tau_on_one_rank(user):
    if size == 1:
        pytest.skip("needs two ranks")
    Op, bd, x0d = _pg_problem()
    tau = 0.02 if rank == size - 1 else 0.01
    f, g = (UserL2(Op, bd), UserL1(0.1)) if user else (MPIL2(Op=Op, b=bd, x0=x0d), L1(0.1))
    with pytest.raises(pm.InvalidArgumentError) as e:
        ProximalGradient(f, g, x0d, tau=tau, niter=5)
    _same_class_everywhere(e)
    Rop, _ = _blockdiag(seed=41, rows=NS, cols=NS)
    with pytest.raises(pm.InvalidArgumentError) as e:
        ADMML2(g, Op, bd, Rop, x0d, tau, niter=3)
    _same_class_everywhere(e)


def test_bad_acceleration_on_one_rank():
    Op, bd, x0d = _pg_problem()
    acc = "nesterov" if rank == size - 1 else "fista"
    with pytest.raises(NotImplementedError) as e:
        ProximalGradient(MPIL2(Op=Op, b=bd, x0=x0d), L1(0.1), x0d, tau=0.01, niter=5, acceleration=acc)
    _same_class_everywhere(e)
    # the failing rank raises its own exception, the others name it
    assert (f"on rank {size - 1}" in str(e.value)) == (rank != size - 1)


class Boom(RuntimeError):
    pass


@pytest.mark.parametrize("where", ["callback", "callback-python", "prox", "grad", "admm-callback",
                                   "admm-prox"])
def test_exception_in_a_callback_on_one_rank(where):
    Op, bd, x0d = _pg_problem()
    calls = []

    def cb(x):
        calls.append(1)
        if rank == size - 1 and len(calls) == 3:
            raise Boom("on purpose")

    class BadL1(UserL1):
        def prox(self, x, tau):
            if rank == size - 1 and where in ("prox", "admm-prox"):
                raise Boom("prox on purpose")
            return super().prox(x, tau)

    class BadL2(UserL2):
        def grad(self, x):
            g = super().grad(x)              # its collectives first: every rank makes them
            if rank == size - 1:
                raise Boom("grad on purpose")
            return g

    Rop, _ = _blockdiag(seed=42, rows=NS, cols=NS)
    with pytest.raises(pm.CallbackError) as e:
        if where == "callback":
            ProximalGradient(MPIL2(Op=Op, b=bd, x0=x0d), L1(0.1), x0d, tau=0.01, niter=8, callback=cb)
        elif where == "callback-python":
            ProximalGradient(UserL2(Op, bd), UserL1(0.1), x0d, tau=0.01, niter=8, callback=cb)
        elif where == "prox":
            ProximalGradient(UserL2(Op, bd), BadL1(0.1), x0d, tau=0.01, niter=8)
        elif where == "grad":
            ProximalGradient(BadL2(Op, bd), L1(0.1), x0d, tau=0.01, niter=8)
        elif where == "admm-callback":
            ADMML2(L1(0.1), Op, bd, Rop, x0d, 0.5, niter=8, callback=cb)
        else:
            ADMML2(BadL1(0.1), Op, bd, Rop, x0d, 0.5, niter=8)
    _same_class_everywhere(e)
    assert isinstance(e.value.original, Boom) == (rank == size - 1)
    assert f"on rank {size - 1}" in str(e.value)
    if where.endswith("callback") or where == "callback-python":
        assert len(calls) == 3                # stopped after the failing iteration, everywhere


def test_proximal_gradient_edges():
    """niter 0, eta > 1 (Python iterations), stacked x0, an empty local block."""
    counts = [0 if r == 0 and size > 1 else 3 for r in range(size)]
    g = np.linspace(-1, 1, sum(counts))
    x = _vec(g, counts)
    f = MPIL2(b=x)                                   # 0.5 ||v - g||^2
    x0 = x.zeros_like()
    r0 = ProximalGradient(f, L1(0.1), x0, tau=0.5, niter=0)
    np.testing.assert_array_equal(r0.asarray(), np.zeros_like(g))
    for eta in (0.5, 1.3):
        v = np.zeros_like(g)
        for _ in range(5):
            v = v + eta * (_soft(v - 0.5 * (v - g), 0.05) - v)
        r = ProximalGradient(f, L1(0.1), x0, tau=0.5, niter=5, eta=eta)
        np.testing.assert_allclose(r.asarray(), v, rtol=1e-13)
    s = pm.StackedDistributedArray([x, x.copy()])
    rs = ProximalGradient(MPIL2(), MPIProxOperator(L1(0.1)), s, tau=0.5, niter=3)
    v = np.concatenate([g, g])
    for _ in range(3):
        v = _soft(0.5 * v, 0.05)
    assert isinstance(rs, pm.StackedDistributedArray)
    np.testing.assert_allclose(rs.asarray(), v, rtol=1e-13)
