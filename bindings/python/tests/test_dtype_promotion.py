"""NumPy's dtype promotion through the arrays and the operators, against NumPy computing the same
on the global arrays: float32 with float64 gives float64, real with complex gives complex, a
complex input to a real operator keeps its imaginary part (PyLops returns the complex product),
and where a result cannot hold the promoted values (in place into a narrower array, a float64
input to a float32 operator) every rank raises DtypeMismatchError instead of truncating.
Uneven splits with an empty rank (rank 0 owns no rows of the operators)."""
import warnings

import numpy as np
import pytest
import scipy.linalg as sl
from mpi4py import MPI

import pylopsmpi as pm

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


def _global(n, dtype, seed):
    rng = np.random.default_rng(seed)
    g = rng.standard_normal(n) + 0.5
    if np.issubdtype(dtype, np.complexfloating):
        g = g + 1j * rng.standard_normal(n)
    return g.astype(dtype)


def _tol(*dtypes):
    return 1e-5 if any(np.dtype(d) in (np.dtype(np.float32), np.dtype(np.complex64)) for d in dtypes) else 1e-13


@pytest.mark.parametrize("da", DTYPES)
@pytest.mark.parametrize("db", DTYPES)
def test_array_arithmetic_promotes(da, db):
    n = 2 * size + 1
    ga, gb = _global(n, da, 1), _global(n, db, 2)
    a, b = pm.DistributedArray.to_dist(ga), pm.DistributedArray.to_dist(gb)
    want_dt = np.result_type(da, db)
    for got, want in ((a + b, ga + gb), (a - b, ga - gb), (a * b, ga * gb)):
        assert got.dtype == want_dt
        np.testing.assert_allclose(got.asarray(), want, rtol=_tol(da, db))
    np.testing.assert_allclose(a.dot(b)[0], np.dot(ga, gb), rtol=_tol(da, db) * 10)
    np.testing.assert_allclose(a.dot(b, vdot=True)[0], np.vdot(ga, gb), rtol=_tol(da, db) * 10)
    assert a.dot(b).dtype == want_dt
    # in place: only when self holds the promoted dtype; a truncation raises on every rank
    c = pm.DistributedArray.to_dist(ga)
    if want_dt == np.dtype(da):
        c += b
        np.testing.assert_allclose(c.asarray(), ga + gb, rtol=_tol(da, db))
    else:
        with pytest.raises(pm.DtypeMismatchError):
            c += b
        np.testing.assert_array_equal(c.asarray(), ga)      # untouched


def test_scalars_and_stacks():
    g = _global(7, np.float64, 3)
    x = pm.DistributedArray.to_dist(g)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # no ComplexWarning: the imaginary part is kept
        y = x * (2 - 1j)
    assert y.dtype == np.complex128
    np.testing.assert_allclose(y.asarray(), g * (2 - 1j))
    z = pm.DistributedArray.to_dist(g.astype(np.float32)) * 2.0     # a Python float keeps float32
    assert z.dtype == np.float32
    s = pm.StackedDistributedArray([x, pm.DistributedArray.to_dist(_global(4, np.complex64, 4))])
    t = s * 1j
    assert t[0].dtype == np.complex128 and t[1].dtype == np.complex64
    with pytest.raises((TypeError, ValueError)):
        x *= 1j                               # NumPy refuses the in-place cast too


def _blockdiag(dtype):
    """Rank r holds one (r + 1) x r block (rank 0: an empty block, no unknowns)."""
    rng = np.random.default_rng(10)
    blocks = [rng.standard_normal((r + 1, r)) for r in range(size)]
    if np.issubdtype(dtype, np.complexfloating):
        blocks = [b + 1j * rng.standard_normal(b.shape) for b in blocks]
    blocks = [b.astype(dtype) for b in blocks]
    return pm.MPIBlockDiag(ops=[blocks[rank]]), sl.block_diag(*blocks) if size > 1 else \
        np.zeros((1, 0), dtype)


def _on(op, g, adjoint):
    """g on the block-diagonal's domain split (range when adjoint), with g's dtype."""
    counts = [r + 1 for r in range(size)] if adjoint else list(range(size))
    return pm.DistributedArray.to_dist(g, local_shapes=[(c,) for c in counts])


@pytest.mark.parametrize("op_dt", DTYPES)
@pytest.mark.parametrize("x_dt", DTYPES)
def test_operator_applies_promote(op_dt, x_dt):
    A, Ad = _blockdiag(op_dt)
    res = np.result_type(op_dt, x_dt)
    real_on_complex = not np.issubdtype(op_dt, np.complexfloating) and \
        np.dtype(res) == np.result_type(op_dt, np.complex64)
    allowed = res == np.dtype(op_dt) or real_on_complex
    for adjoint in (False, True):
        g = _global(Ad.shape[0] if adjoint else Ad.shape[1], x_dt, 20 + adjoint)
        x = _on(A, g, adjoint)
        if not allowed:       # the operator would compute in another precision
            with pytest.raises(pm.DtypeMismatchError):
                A.H @ x if adjoint else A @ x
            continue
        y = A.H @ x if adjoint else A @ x
        assert y.dtype == res
        want = (Ad.conj().T if adjoint else Ad).astype(np.complex128) @ g.astype(np.complex128)
        np.testing.assert_allclose(y.asarray(), want, rtol=_tol(op_dt, x_dt) * 10, atol=_tol(op_dt, x_dt))


def test_complex_data_through_real_operators():
    """PyLops' answer: a real operator applied to complex data gives the complex product."""
    dims = (2 * size + 3, 4)
    D = pm.MPIFirstDerivative(dims, sampling=0.5, kind="forward")
    g = _global(int(np.prod(dims)), np.complex128, 5)
    x = D @ pm.DistributedArray.to_dist(np.zeros(D.shape[1]),
                                        local_shapes=[(pm.local_split(dims, _Rank(r), pm.Partition.SCATTER, 0)[0]
                                                       * dims[1],) for r in range(size)])
    xc = pm.DistributedArray._like(x, dtype=np.complex128)
    off = sum(s[0] for s in x.local_shapes[:rank])
    xc.local_array[:] = g[off:off + xc.local_array.size]
    y = D @ xc
    gm = g.reshape(dims)
    want = np.zeros_like(gm)
    want[:-1] = (gm[1:] - gm[:-1]) / 0.5
    assert y.dtype == np.complex128
    np.testing.assert_allclose(y.asarray(), want.ravel(), rtol=1e-13)
    # a broadcast operator (MPILinearOperator of a NumPy matrix) and a stacked one
    M = np.arange(12.0).reshape(4, 3)
    B = pm.MPILinearOperator(M)
    v = pm.DistributedArray.to_dist(np.array([1 + 1j, 2, 3 - 2j]), partition=pm.Partition.BROADCAST)
    np.testing.assert_allclose((B @ v).asarray(), M @ v.asarray())
    G = pm.MPIGradient(dims)
    gy = G @ xc
    assert all(m.dtype == np.complex128 for m in gy.distarrays)
    np.testing.assert_allclose(gy[0].asarray(), (G @ xc.conj())[0].asarray().conj(), rtol=1e-13)


class _Rank:
    def __init__(self, r):
        self.r = r

    def Get_size(self):
        return size

    def Get_rank(self):
        return self.r


def test_cgls_real_operator_complex_data():
    """CGLS of a real operator on complex data (the Python iterations, promoted applies) gives
    the complex least-squares solution, as PyLops-MPI with NumPy does."""
    A, Ad = _blockdiag(np.float64)
    if Ad.shape[1] == 0:
        return
    xt = _global(Ad.shape[1], np.complex128, 30)
    y = _on(A, Ad @ xt, True)
    x0 = _on(A, np.zeros(Ad.shape[1], np.complex128), False)
    x = pm.cgls(A, y, x0, niter=4 * Ad.shape[1], tol=0.0)[0]
    assert x.dtype == np.complex128
    np.testing.assert_allclose(x.asarray(), xt, rtol=1e-8, atol=1e-10)
