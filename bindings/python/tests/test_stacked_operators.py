"""Stacked operators as first-class operators (PyLops-MPI's MPIStackedLinearOperator): every
composite of stacked operators (scale, negation, .H, .T, conj, +, -, @ / *, **) against the same
algebra on dense serial matrices built here with NumPy, nested stacks (MPIStackedVStack of an
operator and a gradient), dot tests, uneven splits (a rank with no rows), and ADMML2 with
A = MPIGradient (total variation) in the library and in Python against a serial NumPy ADMM."""
import numpy as np
import pytest
import scipy.linalg as sl
from mpi4py import MPI

import pylopsmpi as pm
from pylopsmpi.proximal import L1, MPIProxOperator, ADMML2

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
NY, NX = 9, 5


def _rand(n, dtype, seed):
    rng = np.random.default_rng(seed)
    g = rng.standard_normal(n)
    if np.issubdtype(dtype, np.complexfloating):
        g = g + 1j * rng.standard_normal(n)
    return g.astype(dtype)


def _on(layout_like, g):
    """A copy of the array layout_like (any DistributedArray) holding the global vector g."""
    x = layout_like.empty_like()
    off = sum(int(np.prod(s)) for s in layout_like.local_shapes[:rank])
    x.local_array[...] = g[off:off + x.local_array.size].reshape(x.local_shape)
    return x


def _stack_like(tree_arrays, g):
    """A (nested) stack shaped as tree_arrays holding the concatenation g."""
    if isinstance(tree_arrays, pm.StackedDistributedArray):
        out, k = [], 0
        for d in tree_arrays.distarrays:
            n = d.asarray().size
            out.append(_stack_like(d, g[k:k + n]))
            k += n
        return pm.StackedDistributedArray(out)
    return _on(tree_arrays, g)


def d1(n, kind="centered"):
    """PyLops' first derivative matrix of one axis (edge=False)."""
    D = np.zeros((n, n))
    for i in range(n):
        if kind == "forward" and i < n - 1:
            D[i, i], D[i, i + 1] = -1, 1
        if kind == "centered" and 0 < i < n - 1:
            D[i, i - 1], D[i, i + 1] = -0.5, 0.5
    return D


def d2(n):
    D = np.zeros((n, n))
    for i in range(1, n - 1):
        D[i, i - 1:i + 2] = [1, -2, 1]
    return D


def gradient_mats(dims, kind="centered"):
    """The dense derivative of every axis of a C-order model of shape dims."""
    mats = []
    for a in range(len(dims)):
        m = np.eye(1)
        for b, n in enumerate(dims):
            m = np.kron(m, d1(n, kind) if a == b else np.eye(n))
        mats.append(m)
    return mats


def _parts(dtype):
    """MPIBlockDiag of (rank + 1) * ones(NY, NX) and its dense matrix; the first and second
    derivatives along axis 0 of (NY, NX) and theirs."""
    B = pm.MPIBlockDiag(ops=[((rank + 1) * np.ones((NY, NX))).astype(dtype)])
    Bd = sl.block_diag(*[(r + 1) * np.ones((NY, NX)) for r in range(size)]).astype(dtype)
    D1 = pm.MPIFirstDerivative(dims=(NY, NX), dtype=dtype)
    D2 = pm.MPISecondDerivative(dims=(NY, NX), dtype=dtype)
    return B, Bd, D1, np.kron(d1(NY), np.eye(NX)), D2, np.kron(d2(NY), np.eye(NX))


def _check(op, dense, dtype, x_like, y_like, seed=0, rtol=1e-12):
    """op against its dense matrix, forward and adjoint, and a dot test. x_like / y_like are
    (stacked) arrays with op's domain and range nesting."""
    assert op.shape == dense.shape
    xg = _rand(dense.shape[1], dtype, seed)
    yg = _rand(dense.shape[0], dtype, seed + 1)
    x, y = _stack_like(x_like, xg), _stack_like(y_like, yg)
    fx, hy = op @ x, op.H @ y
    assert type(fx) is type(y_like) and type(hy) is type(x_like)
    np.testing.assert_allclose(fx.asarray(), dense @ xg, rtol=rtol, atol=rtol * 10)
    np.testing.assert_allclose(hy.asarray(), dense.conj().T @ yg, rtol=rtol, atol=rtol * 10)
    pm.dottest(op, x, y)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_composites_of_stacked_operators(dtype):
    B, Bd, D1, D1d, D2, D2d = _parts(dtype)
    S = pm.MPIStackedBlockDiag(ops=[B, D1])
    Sd = sl.block_diag(Bd, D1d)
    xl = pm.StackedDistributedArray([pm.DistributedArray(size * NX, dtype=dtype),
                                     pm.DistributedArray(NY * NX, dtype=dtype)])
    yl = pm.StackedDistributedArray([pm.DistributedArray(size * NY, dtype=dtype),
                                     pm.DistributedArray(NY * NX, dtype=dtype)])
    # the library's operators, not Python composites
    alpha = -3 if dtype == np.float64 else 1.5 - 0.5j
    cases = [(S, Sd), (S * alpha, alpha * Sd), (alpha * S, alpha * Sd), (-S, -Sd),
             (S + S, 2 * Sd), (5 * S - 3 * S, 2 * Sd), (S.conj(), Sd.conj())]
    for op, dense in cases:
        assert isinstance(op, pm.MPIStackedLinearOperator) and op.handle is not None
        _check(op, dense, dtype, xl, yl)
    for op, dense in ((S.H, Sd.conj().T), (S.T, Sd.T)):
        assert isinstance(op, pm.MPIStackedLinearOperator)
        _check(op, dense, dtype, yl, xl)
    Q = S.H @ S
    assert isinstance(Q, pm.MPIStackedLinearOperator)
    _check(Q, Sd.conj().T @ Sd, dtype, xl, xl)
    _check(Q ** 2, np.linalg.matrix_power(Sd.conj().T @ Sd, 2), dtype, xl, xl, rtol=1e-11)
    _check(Q ** 0, np.eye(Sd.shape[1]), dtype, xl, xl)
    # PyLops-MPI's product of stacked block-diagonals with swapped parts
    C = pm.MPIBlockDiag(ops=[((rank + 2) * np.ones((NX, NY))).astype(dtype)])
    Cd = sl.block_diag(*[(r + 2) * np.ones((NX, NY)) for r in range(size)]).astype(dtype)
    P = pm.MPIStackedBlockDiag(ops=[B, C]) * pm.MPIStackedBlockDiag(ops=[C, B])
    zl = pm.StackedDistributedArray([pm.DistributedArray(size * NY, dtype=dtype),
                                     pm.DistributedArray(size * NX, dtype=dtype)])
    _check(P, sl.block_diag(Bd, Cd) @ sl.block_diag(Cd, Bd), dtype, zl, zl)
    # dims / dimsd as PyLops-MPI propagates them
    n = 2 * NY * NX
    St = pm.MPIStackedBlockDiag(ops=[D1, D1])
    for op in (-St, 2 * St, St * 2, St + St, 5 * St - 3 * St, St ** 3):
        assert op.dims == (n,) and op.dimsd == (n,)
    assert St.H.dims == (n,) and St.T.dimsd == (n,)
    # mismatched members are refused on every rank
    with pytest.raises(pm.SizeMismatchError):
        S + pm.MPIStackedBlockDiag(ops=[D1, B])
    with pytest.raises(ValueError):     # shape mismatch (PyLops-MPI's check)
        S @ S


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_nested_stacks(dtype):
    """PyLops-MPI's nesting: MPIStackedVStack([Op, s * Gradient]) maps x to [Op x, [s D0 x, s D1 x]];
    the adjoint takes the nested stack back."""
    _, _, D1, D1d, D2, D2d = _parts(dtype)
    G = pm.MPIGradient(dims=(NY, NX), dtype=dtype)
    assert isinstance(G, pm.MPIStackedLinearOperator)
    Gd = gradient_mats((NY, NX))
    V = pm.MPIStackedVStack([D2, 0.5 * G])
    x = pm.DistributedArray(NY * NX, dtype=dtype)
    y = V @ _on(x, _rand(NY * NX, dtype, 3))
    assert isinstance(y[1], pm.StackedDistributedArray) and y[1].narrays == 2
    _check(V, np.vstack([D2d, 0.5 * Gd[0], 0.5 * Gd[1]]), dtype, x, y)
    # a stack of a stack with a stacked block-diagonal inside
    W = pm.MPIStackedBlockDiag(ops=[V, D1])
    xw = pm.StackedDistributedArray([x, x.empty_like()])
    yw = pm.StackedDistributedArray([y, x.empty_like()])
    _check(W, sl.block_diag(np.vstack([D2d, 0.5 * Gd[0], 0.5 * Gd[1]]), D1d), dtype, xw, yw)
    # one operator in a stack still gives a stack
    one = pm.MPIStackedVStack([D1]) @ x
    assert isinstance(one, pm.StackedDistributedArray) and one.narrays == 1


def test_python_operators_in_stacks():
    """An operator defined in Python (no library handle) in a stack: applied in Python."""
    D1 = pm.MPIFirstDerivative(dims=(NY, NX))

    class Twice(pm.MPILinearOperator):
        def __init__(self):
            super().__init__(shape=D1.shape, dtype=np.float64)

        def _matvec(self, x):
            return x * 2.0

        def _rmatvec(self, x):
            return x * 2.0
    V = pm.MPIStackedVStack([D1, Twice()])
    assert V.handle is None and isinstance(V, pm.MPIStackedLinearOperator)
    x = D1 @ _on(pm.DistributedArray(NY * NX), np.zeros(NY * NX))   # on D1's layout (whole rows)
    y = pm.StackedDistributedArray([x.empty_like(), x.empty_like()])
    _check(V, np.vstack([np.kron(d1(NY), np.eye(NX)), 2 * np.eye(NY * NX)]), np.float64, x, y)
    _check(2.0 * V, 2 * np.vstack([np.kron(d1(NY), np.eye(NX)), 2 * np.eye(NY * NX)]), np.float64,
           x, y)


def test_gradient_uneven_and_empty_rank():
    """A model with fewer rows than ranks (some ranks hold none) through the stacked algebra."""
    dims = (max(size - 1, 1), 4)
    G = pm.MPIGradient(dims=dims, kind="forward")
    Gd = gradient_mats(dims, "forward")
    x = pm.DistributedArray(int(np.prod(dims)), local_shapes=[
        (s[0] * dims[1],) for s in [pm.local_split(dims, _Fake(r), pm.Partition.SCATTER, 0)
                                    for r in range(size)]])
    y = G @ _on(x, _rand(x.global_shape[0], np.float64, 5))
    H = G.H @ (2.0 * G)
    _check(H, 2 * sum(g.T @ g for g in Gd), np.float64, x, x)
    _check(G, np.vstack(Gd), np.float64, x, y)


class _Fake:
    """A communicator stand-in for local_split: rank r of size."""

    def __init__(self, r):
        self.r = r

    def Get_size(self):
        return size

    def Get_rank(self):
        return self.r


# --- ADMML2 with A = MPIGradient (total variation) ------------------------------------------------
def _soft(v, t):
    return np.maximum(np.abs(v) - t, 0) * np.sign(v)


def np_cgls(A, y, x, niter, tol):
    x = x.copy()
    s = y - A @ x
    r = A.T @ s
    c, q = r.copy(), A @ r
    kold = r @ r
    it = 0
    while it < niter and kold > tol:
        a = kold / (q @ q)
        x = x + a * c
        s = s - a * q
        r = A.T @ s
        k = r @ r
        c = r + (k / kold) * c
        q = A @ c
        kold = k
        it += 1
    return x


def np_admml2(A, b, R, sigma, x0, tau, niter, gfirst, inner_niter=10, inner_tol=1e-4):
    """PyLops-MPI's ADMML2 iterations (pyproximal's) on dense matrices, g = sigma ||.||_1."""
    x, z = x0.copy(), R @ x0
    u = np.zeros_like(z)
    s = 1 / np.sqrt(tau)
    M = np.vstack([A, s * R])
    for _ in range(niter):
        if gfirst:
            Ax = R @ x
            z = _soft(Ax + u, tau * sigma)
            x = np_cgls(M, np.concatenate([b, s * (z - u)]), x, inner_niter, inner_tol)
        else:
            x = np_cgls(M, np.concatenate([b, s * (z - u)]), x, inner_niter, inner_tol)
            Ax = R @ x
            z = _soft(Ax + u, tau * sigma)
        u = u + Ax - z
    return x, z


@pytest.mark.parametrize("gfirst", [False, True])
def test_admml2_total_variation(gfirst):
    """TV denoising-deblurring: Op a smoothing MPIBlockDiag per trace, A = MPIGradient; in the
    library (plm_solve_admml2_stacked) and in Python (show=True, and A a Python composite), all
    against the serial NumPy iterations."""
    ny, nx = 2 * size + 1, 6
    rows = pm.local_split((ny,), comm, pm.Partition.SCATTER, 0)[0]
    allrows = comm.allgather(rows)
    K = 0.25 * np.eye(nx, k=-1) + 0.5 * np.eye(nx) + 0.25 * np.eye(nx, k=1)
    Op = pm.MPIBlockDiag(ops=[K] * rows)
    Opd = np.kron(np.eye(ny), K)
    G = pm.MPIGradient(dims=(ny, nx), kind="forward")
    Gd = np.vstack(gradient_mats((ny, nx), "forward"))
    xt = np.zeros((ny, nx))
    xt[ny // 3:, 2:] = 1.0
    b = Opd @ xt.ravel() + 0.05 * np.sin(np.arange(ny * nx))
    shapes = [(r * nx,) for r in allrows]
    bd = pm.DistributedArray.to_dist(b, local_shapes=shapes)
    x0 = pm.DistributedArray.to_dist(np.zeros(ny * nx), local_shapes=shapes)
    sigma, tau, kw = 0.05, 0.9 / 8, {"niter": 6}
    # (the Python path, show=True, makes many small collectives: a few iterations, one order)
    variants = [(L1(sigma), False, G, 12), (L1(sigma), False, 1.0 * G, 12)]
    if gfirst:
        variants.append((MPIProxOperator(L1(sigma)), True, G, 3))
    for g, show, A, niter in variants:
        xr, zr = np_admml2(Opd, b, Gd, sigma, np.zeros(ny * nx), tau, niter, gfirst, 6)
        x, z = ADMML2(g, Op, bd, A, x0, tau, niter=niter, gfirst=gfirst, show=show, kwargs_solver=kw)
        assert isinstance(z, pm.StackedDistributedArray) and z.narrays == 2
        np.testing.assert_allclose(x.asarray(), xr, rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(z.asarray(), zr, rtol=1e-9, atol=1e-11)
