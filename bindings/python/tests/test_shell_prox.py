"""MPIShellOperator (plm_op_shell: Python _matvec/_rmatvec on DistributedArrays, applied by the
library) and the L1/L0 proximal operators, against NumPy references."""
import numpy as np
import pytest
import scipy.linalg as sl
from mpi4py import MPI

import pylopsmpi as pm

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size


class Diagonal(pm.MPIShellOperator):
    """y = d * x: subclassing, as a PyLops-MPI user subclasses MPILinearOperator."""

    def __init__(self, d):
        super().__init__(domain=d, range=d, dtype=d.dtype)
        self.d = d
        self.calls = 0

    def _matvec(self, x):
        self.calls += 1
        return x * self.d

    def _rmatvec(self, x):
        self.calls += 1
        return x * self.d.conj()


class Cumsum(pm.MPIShellOperator):
    """y = cumsum(x): collectives (asarray, to_dist) inside the functions, the same on every rank."""

    def __init__(self, n):
        super().__init__(shape=(n, n))

    def _matvec(self, x):
        return pm.DistributedArray.to_dist(np.cumsum(x.asarray()))

    def _rmatvec(self, y):
        return pm.DistributedArray.to_dist(np.cumsum(y.asarray()[::-1])[::-1])


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_shell_diagonal_composes_in_the_library(dtype):
    n = 3 * size + 1
    rng = np.random.default_rng(5)
    dg = (rng.standard_normal(n) + (1j * rng.standard_normal(n) if dtype == np.complex128 else 0)).astype(dtype)
    xg = (rng.standard_normal(n) + (1j * rng.standard_normal(n) if dtype == np.complex128 else 0)).astype(dtype)
    d = pm.DistributedArray.to_dist(dg)
    x = pm.DistributedArray.to_dist(xg)
    S = Diagonal(d)
    assert S.handle is not None
    np.testing.assert_allclose((S @ x).asarray(), dg * xg, rtol=1e-13)
    np.testing.assert_allclose((S.H @ x).asarray(), dg.conj() * xg, rtol=1e-13)
    # composites run in the library, which calls back into _matvec / _rmatvec
    D = pm.MPIFirstDerivative(n, dtype=dtype)
    C = 2.0 * S + D @ S
    Dd = np.zeros((n, n))
    for i in range(1, n - 1):
        Dd[i, i - 1], Dd[i, i + 1] = -0.5, 0.5
    ref = 2.0 * np.diag(dg) + Dd @ np.diag(dg)
    before = S.calls
    np.testing.assert_allclose((C @ x).asarray(), ref @ xg, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose((C.H @ x).asarray(), ref.conj().T @ xg, rtol=1e-12, atol=1e-12)
    assert S.calls > before
    assert pm.dottest(C, x, x.copy(), rtol=1e-12)


def test_shell_with_collectives_and_native_cgls():
    n = 4 * size + 2
    S = Cumsum(n)
    L = np.tril(np.ones((n, n)))
    xg = np.linspace(1, 2, n)
    x = pm.DistributedArray.to_dist(xg)
    np.testing.assert_allclose((S @ x).asarray(), L @ xg, rtol=1e-13)
    np.testing.assert_allclose((S.H @ x).asarray(), L.T @ xg, rtol=1e-13)
    # the library's own CGLS (S has a C handle) solves through the callbacks
    y = pm.DistributedArray.to_dist(L @ xg)
    x0 = y.zeros_like()
    xinv, istop, it, r1, r2, cost = pm.cgls(S, y, x0, niter=4 * n, tol=1e-28)
    np.testing.assert_allclose(xinv.asarray(), xg, rtol=1e-8)


def test_shell_functions_and_exception_on_one_rank():
    n = 2 * size
    S = pm.MPIShellOperator(shape=(n, n), matvec=lambda x: x * 3.0, rmatvec=lambda x: x * 3.0)
    x = pm.DistributedArray.to_dist(np.arange(float(n)))
    np.testing.assert_allclose(((S + S) @ x).asarray(), 6.0 * np.arange(n))

    class Boom(RuntimeError):
        pass

    def bad(x):
        if rank == size - 1:
            raise Boom("on purpose")
        return x
    B = pm.MPIShellOperator(shape=(n, n), matvec=bad, rmatvec=bad)
    with pytest.raises(pm.CallbackError) as e:
        (B + S) @ x                      # the library applies it: an agreed error
    assert isinstance(e.value.original, Boom) == (rank == size - 1)
    kinds = comm.allgather(type(e.value).__name__)
    assert len(set(kinds)) == 1
    # a wrong result size on one rank is agreed too
    W = pm.MPIShellOperator(shape=(n, n), matvec=lambda x: pm.DistributedArray(n + 1))
    with pytest.raises(pm.CallbackError):
        (2.0 * W) @ x


def _sdist(g):
    return pm.DistributedArray.to_dist(g)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_prox_l1_l0(dtype):
    n = 5 * size + 2
    rng = np.random.default_rng(2)
    g = rng.standard_normal(n) * 2
    if dtype == np.complex128:
        g = g + 1j * rng.standard_normal(n)
    g = g.astype(dtype)
    x = _sdist(g)
    sigma, tau = 0.7, 1.3
    f1 = pm.proximal.L1(sigma=sigma)
    assert np.isclose(f1(x), sigma * np.sum(np.abs(g)))
    ref = np.maximum(np.abs(g) - tau * sigma, 0) * (np.exp(1j * np.angle(g)) if dtype == np.complex128 else np.sign(g))
    np.testing.assert_allclose(f1.prox(x, tau).asarray(), ref, rtol=1e-13, atol=1e-14)
    # Moreau: prox of the conjugate of sigma|.|_1 is the projection on the sigma-ball
    if dtype == np.float64:
        np.testing.assert_allclose(f1.proxdual(x, tau).asarray(), np.clip(g, -sigma, sigma), rtol=1e-12)
    f0 = pm.proximal.L0(sigma=sigma)
    h = g.copy()
    h[::3] = 0
    xh = _sdist(h)
    assert f0(xh) == np.count_nonzero(h)
    ref0 = np.where(np.abs(h) <= tau * sigma, 0, h)    # pyproximal's L0 threshold
    np.testing.assert_allclose(f0.prox(xh, tau).asarray(), ref0)
    # PyLops-MPI's wrapper over a pyproximal-like object (by name and sigma, no g)
    L1 = type("L1", (), {"sigma": sigma, "g": None, "hasgrad": False})
    P = pm.MPIProxOperator(L1())
    np.testing.assert_allclose(P.prox(x, tau).asarray(), ref, rtol=1e-13, atol=1e-14)
    s = pm.StackedDistributedArray([x, x])
    assert np.isclose(P(s), 2 * sigma * np.sum(np.abs(g)))


def test_prox_bad_tau_on_one_rank():
    x = _sdist(np.ones(2 * size))
    f = pm.proximal.L1(1.0)
    tau = 2.0 if rank == size - 1 else 1.0
    if size > 1:
        with pytest.raises(pm.PylopsMPIError) as e:
            f.prox(x, tau)
        assert len(set(comm.allgather(type(e.value).__name__))) == 1
