"""The newer proximal features against serial NumPy versions of pyproximal's formulas and
iterations, written here: L0's threshold, MPIL21, the compositions (postcomposition,
precomposition, affine_addition, chain, .H) and pyproximal's grad / proxdual, PrimalDual (plain
and stacked A: total variation with MPIGradient and MPIL21), AdaptivePrimalDual and
ProximalGradient's backtracking; each in the library and in Python (user objects, show=True).
Uneven blocks per rank (rank r owns 2 + r unknowns), a rank with no elements, NaN data."""
import numpy as np
import pytest
from mpi4py import MPI

import pylopsmpi as pm
from pylopsmpi.proximal import (L1, L0, Box, MPIL2, MPIL21, MPIProxOperator, PrimalDual,
                                AdaptivePrimalDual, ProximalGradient)

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
NS = [2 + r for r in range(size)]
N = sum(NS)


def _vec(g, counts=None):
    counts = NS if counts is None else counts
    x = pm.DistributedArray(global_shape=len(g), local_shapes=[(c,) for c in counts], dtype=g.dtype)
    off = sum(counts[:rank])
    x.local_array[:] = g[off:off + counts[rank]]
    return x


def _rand(n, seed=0, complex_=False):
    rng = np.random.default_rng(seed)
    g = rng.standard_normal(n)
    return g + 1j * rng.standard_normal(n) if complex_ else g


def _soft(v, t):
    m = np.abs(v)
    return np.where(m == 0, 0, v * (np.maximum(m - t, 0) / np.where(m == 0, 1, m)))


# --- L0 and L21 -----------------------------------------------------------------------------------
def test_l0_pyproximal_threshold():
    g = _rand(N, 1)
    g[::4] = 0.5                       # exactly tau sigma: zeroed by both rules
    g[1::4] = -0.75                    # between tau sigma and sqrt(2 tau sigma): pyproximal keeps it
    sigma, tau = 2.5, 0.2
    p = L0(sigma).prox(_vec(g), tau).asarray()
    np.testing.assert_array_equal(p, np.where(np.abs(g) <= tau * sigma, 0, g))
    wrapped = MPIProxOperator(type("L0", (), {"sigma": sigma, "g": None, "hasgrad": False})())
    np.testing.assert_array_equal(wrapped.prox(_vec(g), tau).asarray(), p)


def _l21_ref(gs, t, dual):
    s = np.sqrt(sum(np.abs(g) ** 2 for g in gs))
    m = np.maximum(s, t)
    m = np.where(np.isnan(s), s, m)
    f = t / m if dual else 1 - t / m
    return [f * g for g in gs]


@pytest.mark.parametrize("ndim", [1, 2, 3])
@pytest.mark.parametrize("complex_", [False, True])
def test_mpil21(ndim, complex_):
    counts = [0 if r == size - 1 and size > 1 else 3 + r for r in range(size)]   # an empty rank
    n = sum(counts)
    gs = [_rand(n, 5 + k, complex_) for k in range(ndim)]
    x = pm.StackedDistributedArray([_vec(g, counts) for g in gs])
    sigma, tau = 0.6, 0.8
    f = MPIL21(ndim=ndim, sigma=sigma)
    assert np.isclose(f(x), sigma * np.sum(np.sqrt(sum(np.abs(g) ** 2 for g in gs))), rtol=1e-13)
    for got, want in zip(f.prox(x, tau).distarrays, _l21_ref(gs, tau * sigma, False)):
        np.testing.assert_allclose(got.asarray(), want, rtol=1e-13, atol=1e-15)
    for got, want in zip(f.proxdual(x, tau).distarrays, _l21_ref(gs, sigma, True)):
        np.testing.assert_allclose(got.asarray(), want, rtol=1e-13, atol=1e-15)
    # pyproximal's grad: the Moreau envelope's, (x - prox_{1 f}(x)) / 1
    for got, g, p in zip(f.grad(x).distarrays, gs, _l21_ref(gs, sigma, False)):
        np.testing.assert_allclose(got.asarray(), g - p, rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError):
        f(pm.StackedDistributedArray([_vec(g, counts) for g in gs + [gs[0]]]))


def test_mpil21_nan_group():
    a, b = _rand(N, 2), _rand(N, 3)
    a[N // 2] = np.nan
    x = pm.StackedDistributedArray([_vec(a), _vec(b)])
    f = MPIL21(2, 1.0)
    assert np.isnan(f(x))
    p = f.prox(x, 0.5)
    assert np.isnan(p[0].asarray()[N // 2]) and np.isnan(p[1].asarray()[N // 2])
    ok = np.arange(N) != N // 2
    np.testing.assert_allclose(p[1].asarray()[ok], _l21_ref([a[ok], b[ok]], 0.5, False)[1], rtol=1e-13)


# --- compositions ------------------------------------------------------------------------------
class UserL1:
    """A user proximal object on DistributedArrays (no library handle): f = ||x||_1."""
    hasgrad = False

    def __call__(self, x):
        return float(comm.allreduce(np.sum(np.abs(x.local_array))))

    def prox(self, x, tau):
        y = x.empty_like()
        y.local_array[:] = _soft(x.local_array, tau)
        return y

    def grad(self, x):
        return x - self.prox(x, 1.0)


def _compositions(f, v, vd):
    """(name, composed, serial prox(x, tau), value(x), grad(x)) with f = sigma||.||_1."""
    s = getattr(getattr(f, "proxop", f), "sigma", 1.0)
    a, b = -1.5, 0.25
    return [
        ("post", f.postcomposition(2.0), lambda x, t: _soft(x, 2 * t * s),
         lambda x: 2 * s * np.sum(np.abs(x)), lambda x: 2 * (x - _soft(x, s))),
        ("rmul", 3.0 * f, lambda x, t: _soft(x, 3 * t * s),
         lambda x: 3 * s * np.sum(np.abs(x)), lambda x: 3 * (x - _soft(x, s))),
        ("pre", f.precomposition(a, b), lambda x, t: (_soft(a * x + b, a * a * t * s) - b) / a,
         lambda x: s * np.sum(np.abs(a * x + b)), lambda x: a * ((a * x + b) - _soft(a * x + b, s))),
        ("pre array", f.precomposition(a, vd), lambda x, t: (_soft(a * x + v, a * a * t * s) - v) / a,
         lambda x: s * np.sum(np.abs(a * x + v)), lambda x: a * ((a * x + v) - _soft(a * x + v, s))),
        ("affine", f + vd, lambda x, t: _soft(x - t * v, t * s),
         lambda x: s * np.sum(np.abs(x)) + np.dot(v, x), lambda x: x - _soft(x, s) + v),
        ("minus", f - vd, lambda x, t: _soft(x + t * v, t * s),
         lambda x: s * np.sum(np.abs(x)) - np.dot(v, x), lambda x: x - _soft(x, s) - v),
    ]


@pytest.mark.parametrize("user", [False, True])
def test_compositions(user):
    g, v = _rand(N, 7), _rand(N, 8)
    x, vd = _vec(g), _vec(v)
    # a user object composes through pyproximal's formulas (in Python), ours in the library
    base = _UserComposable(UserL1()) if user else MPIProxOperator(L1(0.7))
    tau = 0.45
    for name, c, prox, value, grad in _compositions(base, v, vd):
        np.testing.assert_allclose(c.prox(x, tau).asarray(), prox(g, tau), rtol=1e-12, atol=1e-14,
                                   err_msg=name)
        assert np.isclose(c(x), value(g), rtol=1e-12), name
        np.testing.assert_allclose(c.grad(x).asarray(), grad(g), rtol=1e-12, atol=1e-14,
                                   err_msg=name)
        # pyproximal's proxdual: Moreau's identity x - tau prox_{f/tau}(x / tau)
        np.testing.assert_allclose(c.proxdual(x, tau).asarray(), g - tau * prox(g / tau, 1 / tau),
                                   rtol=1e-12, atol=1e-14, err_msg=name)
        assert (c._plm_handle() is None) == user, name


class _UserComposable(pm.proximal._prox._Compositions):
    """A user object given pyproximal's composition methods (as a pyproximal subclass has)."""

    def __init__(self, f):
        self.f, self.hasgrad, self.sigma = f, False, 1.0

    def __call__(self, x):
        return self.f(x)

    def prox(self, x, tau):
        return self.f.prox(x, tau)

    def grad(self, x):
        return self.f.grad(x)

    def proxdual(self, x, tau):
        return x - self.prox(x * (1.0 / tau), 1.0 / tau) * tau


def test_chain_adjoint_and_box():
    g = _rand(N, 9)
    x = _vec(g)
    f, box = MPIProxOperator(L1(0.4)), MPIProxOperator(Box(-0.3, 0.5))
    c = f.chain(box)
    np.testing.assert_allclose(c.prox(x, 0.6).asarray(), np.clip(_soft(g, 0.24), -0.3, 0.5), rtol=1e-13)
    np.testing.assert_allclose((box * f).prox(x, 0.6).asarray(), c.prox(x, 0.6).asarray())
    # .H swaps prox and proxdual: L1's proxdual is the clip to [-sigma, sigma]
    np.testing.assert_allclose(f.H.prox(x, 0.6).asarray(), np.clip(g, -0.4, 0.4), rtol=1e-13)
    np.testing.assert_allclose(f.H.proxdual(x, 0.6).asarray(), _soft(g, 0.24), rtol=1e-13)
    with pytest.raises(NotImplementedError):
        f.postcomposition("2")
    with pytest.raises(NotImplementedError):
        f.affine_addition(np.ones(N))


# --- serial solvers ----------------------------------------------------------------------------
def _dense(op, n):
    """The global matrix of an operator (plain or stacked range) from its applies to e_j."""
    cols = []
    for j in range(n):
        e = np.zeros(n)
        e[j] = 1.0
        y = op.matvec(pm.DistributedArray.to_dist(e))
        cols.append(y.asarray().ravel())
    return np.array(cols).T


def _rows(ny, nx):
    """Local sizes of a (ny, nx) model split along its rows (MPIGradient's default)."""
    return [(ny // size + (1 if r < ny % size else 0)) * nx for r in range(size)]


def np_pd(G, parts, fprox, gdual, x, y, taus, mus, theta, niter, gfirst, z=None):
    xhat = x.copy()
    for it in range(niter):
        t, m = taus[it], mus[it]
        xold = x.copy()

        def ystep(y):
            return gdual(y + m * (G @ xhat), m)

        def xstep(x):
            aty = G.T @ y + (z if z is not None else 0)
            return fprox(x - t * aty, t)
        if gfirst:
            y = ystep(y)
            x = xstep(x)
            xhat = x + theta * (x - xold)
        else:
            x = xstep(x)
            xhat = x + theta * (x - xold)
            y = ystep(y)
    return x, y


def _l21_dual_np(y, parts, s):
    ys = np.split(y, parts)
    return np.concatenate(_l21_ref(ys, s, True))


@pytest.mark.parametrize("gfirst", [True, False])
@pytest.mark.parametrize("path", ["native", "python"])
def test_primal_dual_tv(gfirst, path, capsys):
    """Total-variation denoising: f = sf/2 ||x - d||^2, g = sg ||grad x||_{2,1} on MPIGradient."""
    ny, nx = 3 * size + 1, 4
    n = ny * nx
    d = _rand(n, 11)
    Gop = pm.MPIGradient(dims=(ny, nx), kind="forward")
    G = _dense(Gop, n)
    sf, sg, tau, mu, niter = 1.0, 0.3, 0.35, 0.35, 12
    counts = _rows(ny, nx)                 # the gradient's model split (whole rows)
    f = MPIL2(b=_vec(d, counts), sigma=sf)
    g = MPIL21(ndim=2, sigma=sg)
    x0 = _vec(np.zeros(n), counts)
    seen = []
    x, y = PrimalDual(f, g, Gop, x0, tau, mu, theta=1.0, niter=niter, gfirst=gfirst,
                      callback=lambda xx, yy: seen.append(1), callbacky=True, returny=True,
                      show=(path == "python"))
    wx, wy = np_pd(G, 2, lambda u, t: (u + t * sf * d) / (1 + t * sf),
                   lambda u, m: _l21_dual_np(u, 2, sg), np.zeros(n), np.zeros(2 * n),
                   [tau] * niter, [mu] * niter, 1.0, niter, gfirst)
    np.testing.assert_allclose(x.asarray(), wx, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(np.concatenate([m.asarray().ravel() for m in y.distarrays]), wy,
                               rtol=1e-11, atol=1e-13)
    assert len(seen) == niter
    out = capsys.readouterr().out
    if path == "python" and rank == 0:
        assert "Primal-dual" in out and "J = f + g + z^x" in out


@pytest.mark.parametrize("order", ["pyproximal", "pylops_mpi"])
def test_primal_dual_plain(order):
    """A block-diagonal A, g = L1 (dual: the clip), y0, z, step sequences, theta < 1."""
    M = [3] * size
    rng = np.random.default_rng(12)
    blocks = [rng.standard_normal((3, c)) + np.eye(3, c) for c in NS]
    import scipy.linalg as sl
    G = sl.block_diag(*blocks)
    Aop = pm.MPIBlockDiag([blocks[rank]])
    d, y0, z = _rand(N, 13), _rand(sum(M), 14), _rand(N, 15)
    sf, sg, niter = 0.8, 0.3, 7
    taus, mus = np.linspace(0.2, 0.3, niter), np.linspace(0.4, 0.35, niter)
    f, g = MPIL2(b=_vec(d), sigma=sf), MPIProxOperator(L1(sg))
    x0 = _vec(_rand(N, 16))
    y0d = _vec(y0, M)
    if order == "pyproximal":
        x, y = PrimalDual(f, g, Aop, x0, taus, mus, y0=y0d, z=_vec(z), theta=0.6, niter=niter,
                          returny=True)
    else:
        x, y = PrimalDual(f, g, Aop, x0, y0d, taus, mus, z=_vec(z), theta=0.6, niter=niter,
                          returny=True)
    wx, wy = np_pd(G, 1, lambda u, t: (u + t * sf * d) / (1 + t * sf),
                   lambda u, m: np.clip(u, -sg, sg), _rand(N, 16), y0, taus, mus, 0.6, niter, True,
                   z=z)
    np.testing.assert_allclose(x.asarray(), wx, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(y.asarray(), wy, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(y0d.asarray(), y0)     # y0 untouched


def np_apd(G, nparts, fprox, gdual, x, tau, mu, alpha, eta, s, delta, niter, tol, z=None):
    y = np.zeros(G.shape[0])
    ax, aty = np.zeros(G.shape[0]), np.zeros(G.shape[1])
    taus, mus, alphas = [tau], [mu], [alpha]
    p = d = tol + 1
    it = 0
    while it < niter and p > tol and d > tol:
        xold, yold, axold, atyold = x.copy(), y.copy(), ax.copy(), aty.copy()
        if z is not None:
            aty = aty + z
        x = fprox(x - tau * aty, tau)
        ax = G @ x
        y = gdual(y + mu * (2 * ax - axold), mu)
        aty = G.T @ y
        r = (xold - x) / tau - (atyold - aty)
        if z is not None:
            r = r - G.T @ z + z
        p = np.linalg.norm(r)
        d = np.linalg.norm((yold - y) / mu - (axold - ax))
        if p > s * d * delta:
            tau, mu, alpha = tau / (1 - alpha), mu * (1 - alpha), alpha * eta
        elif p < s * d / delta:
            tau, mu, alpha = tau * (1 - alpha), mu / (1 - alpha), alpha * eta
        taus.append(tau), mus.append(mu), alphas.append(alpha)
        it += 1
    return x, (np.array(taus), np.array(mus), np.array(alphas))


@pytest.mark.parametrize("case", ["plain", "plain z", "gradient", "python"])
def test_adaptive_primal_dual(case):
    sf, sg, niter = 0.9, 0.3, 15
    if case == "gradient":
        ny, nx = 2 * size + 2, 3
        n = ny * nx
        Aop = pm.MPIGradient(dims=(ny, nx), kind="forward")
        G = _dense(Aop, n)
        g, gd = MPIL21(2, sg), (lambda u, m: _l21_dual_np(u, 2, sg))
        counts = _rows(ny, nx)
        d, x0 = _rand(n, 20), _vec(np.zeros(n), counts)

        def mk(v):
            return _vec(v, counts)
    else:
        rng = np.random.default_rng(21)
        blocks = [rng.standard_normal((c, c)) + 2 * np.eye(c) for c in NS]
        import scipy.linalg as sl
        G = sl.block_diag(*blocks)
        Aop = pm.MPIBlockDiag([blocks[rank]])
        g, gd = MPIProxOperator(L1(sg)), (lambda u, m: np.clip(u, -sg, sg))
        d, x0, n, mk = _rand(N, 22), _vec(np.zeros(N)), N, _vec
    z = _rand(n, 23) if case == "plain z" else None
    f = MPIL2(b=mk(d), sigma=sf)
    if case == "python":
        g = MPIProxOperator(L1(sg)).postcomposition(1.0)
        g = _UserComposable(g)        # no library handle: Python iterations
    x, (taus, mus, alphas) = AdaptivePrimalDual(f, g, Aop, x0, 0.6, 0.5, z=mk(z) if z is not None else None,
                                                niter=niter)
    wx, (wt, wm, wa) = np_apd(G, 1, lambda u, t: (u + t * sf * d) / (1 + t * sf), gd,
                              np.zeros(n), 0.6, 0.5, 0.5, 0.95, 1.0, 1.5, niter, 1e-10, z)
    np.testing.assert_allclose(x.asarray(), wx, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(taus, wt, rtol=1e-12)
    np.testing.assert_allclose(mus, wm, rtol=1e-12)
    np.testing.assert_allclose(alphas, wa, rtol=1e-12)


@pytest.mark.parametrize("path", ["native", "python"])
@pytest.mark.parametrize("eta", [1.0, 0.7])
def test_proximal_gradient_backtracking(path, eta):
    """pyproximal's ProximalGradient with tau=None: the line search from tau = 1."""
    rng = np.random.default_rng(30)
    blocks = [rng.standard_normal((4, c)) for c in NS]
    import scipy.linalg as sl
    G = 2 * sl.block_diag(*blocks)
    Aop = pm.MPIBlockDiag([2 * blocks[rank]])
    b = _rand(4 * size, 31)
    f = MPIL2(Op=Aop, b=_vec(b, [4] * size), x0=_vec(np.zeros(N)))
    sg, niter = 0.2, 10
    g = MPIProxOperator(L1(sg)) if path == "native" else _UserComposable(UserL1()).postcomposition(sg)
    x = ProximalGradient(f, g, _vec(np.zeros(N)), tau=None, eta=eta, niter=niter,
                         acceleration="fista", niterback=20)

    def fv(x, grad=False):
        r = G @ x - b
        return G.T @ r if grad else 0.5 * r @ r
    xs, y, t, tau = np.zeros(N), np.zeros(N), 1.0, 1.0
    for it in range(niter):
        xold = xs.copy()
        gr, fy = fv(y, True), fv(y)
        for _ in range(20):
            zz = _soft(y - tau * gr, tau * sg)
            dd = zz - y
            if fv(zz) <= fy + gr @ dd + (1 / (2 * tau)) * dd @ dd:
                break
            tau *= 0.5
        xs = zz
        if eta != 1.0:
            xs = xs + eta * (_soft(xs - tau * fv(xs, True), tau * sg) - xs)
        told = t
        t = (1 + np.sqrt(1 + 4 * t * t)) / 2
        y = xs + ((told - 1) / t) * (xs - xold)
    np.testing.assert_allclose(x.asarray(), xs, rtol=1e-10, atol=1e-12)


def test_mpil2_kwargs_solver_python_path():
    """kwargs_solver beyond tol runs PyLops-MPI's prox iterations in Python: the same result."""
    rng = np.random.default_rng(40)
    blocks = [rng.standard_normal((3, c)) + np.eye(3, c) for c in NS]
    Aop = pm.MPIBlockDiag([blocks[rank]])
    b, x = _vec(_rand(3 * size, 41), [3] * size), _vec(_rand(N, 42))
    calls = []
    for solver in ("cg", "cgls"):
        f1 = MPIL2(Aop, b, sigma=1.5, niter=6, x0=_vec(np.zeros(N)), warm=False, solver=solver,
                   kwargs_solver={"tol": 1e-10})
        f2 = MPIL2(Aop, b, sigma=1.5, niter=6, x0=_vec(np.zeros(N)), warm=False, solver=solver,
                   kwargs_solver={"tol": 1e-10, "show": False, "callback": lambda v: calls.append(1)})
        assert f2._plm_handle() is None
        np.testing.assert_allclose(f2.prox(x, 0.4).asarray(), f1.prox(x, 0.4).asarray(), rtol=1e-12)
    assert calls
