"""Operators forward and adjoint against SciPy/NumPy references, plus dot tests."""
import math

import numpy as np
import pytest
import scipy.linalg as sl
from mpi4py import MPI
from scipy.sparse.linalg import LinearOperator, aslinearoperator

import pylopsmpi as pm

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size


def _rand(shape, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    g = rng.standard_normal(shape)
    if np.iscomplexobj(np.zeros(1, dtype)):
        g = g + 1j * rng.standard_normal(shape)
    return g.astype(dtype)


def _check(Op, Dense, dtype=np.float64, rtol=1e-10, xpart=pm.Partition.SCATTER,
           ypart=pm.Partition.SCATTER):
    """Op (distributed) against the dense matrix Dense, forward and adjoint, and the dot test."""
    xg, yg = _rand(Dense.shape[1], dtype, 11), _rand(Dense.shape[0], dtype, 12)
    x = pm.DistributedArray.to_dist(xg, partition=xpart)
    y = pm.DistributedArray.to_dist(yg, partition=ypart)
    fwd = Op @ x
    adj = Op.H @ y
    np.testing.assert_allclose(fwd.asarray().ravel(), Dense @ xg, rtol=rtol, atol=rtol)
    np.testing.assert_allclose(adj.asarray().ravel(), Dense.conj().T @ yg, rtol=rtol, atol=rtol)
    assert pm.dottest(Op, x, y, rtol=max(rtol, 1e-10))


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("kind", ["dense", "scipy", "callback"])
def test_blockdiag(kind, dtype):
    A = _rand((3 + rank, 2 + rank % 2), dtype, 100 + rank)
    Aall = comm.allgather(A)
    if kind == "dense":
        op = A
    elif kind == "scipy":
        op = aslinearoperator(A)
    else:
        op = LinearOperator(A.shape, matvec=lambda v: A @ v, rmatvec=lambda v: A.conj().T @ v, dtype=dtype)
    Op = pm.MPIBlockDiag([op])
    _check(Op, sl.block_diag(*Aall), dtype)


def test_vstack_hstack():
    A = _rand((2 + rank, 4), seed=rank)
    Aall = comm.allgather(A)
    _check(pm.MPIVStack([A]), np.vstack(Aall), xpart=pm.Partition.BROADCAST)
    B = _rand((4, 1 + rank), seed=50 + rank)
    Ball = comm.allgather(B)
    _check(pm.MPIHStack([B]), np.hstack(Ball), ypart=pm.Partition.BROADCAST)


def _deriv_matrix(n, kind, edge=False, order=3):
    D = np.zeros((n, n))
    for i in range(n):
        if kind == "forward" and i < n - 1:
            D[i, i + 1], D[i, i] = 1, -1
        elif kind == "backward" and i > 0:
            D[i, i], D[i, i - 1] = 1, -1
        elif kind == "centered" and order == 3 and 0 < i < n - 1:
            D[i, i + 1], D[i, i - 1] = 0.5, -0.5
    if kind == "centered" and edge:
        D[0, :2], D[-1, -2:] = [-1, 1], [-1, 1]
    return D


@pytest.mark.parametrize("kind", ["forward", "backward", "centered"])
def test_first_derivative(kind):
    n, m = 3 * size + 2, 3
    D = np.kron(_deriv_matrix(n, kind, edge=True), np.eye(m)) / 2.0
    _check(pm.MPIFirstDerivative((n, m), sampling=2.0, kind=kind, edge=True), D)


def test_second_derivative_laplacian_gradient():
    n, m = 2 * size + 3, 4
    D2 = np.diag(-2 * np.ones(n)) + np.diag(np.ones(n - 1), 1) + np.diag(np.ones(n - 1), -1)
    D2[0] = D2[-1] = 0
    _check(pm.MPISecondDerivative((n, m)), np.kron(D2, np.eye(m)))
    E2 = np.diag(-2 * np.ones(m)) + np.diag(np.ones(m - 1), 1) + np.diag(np.ones(m - 1), -1)
    E2[0] = E2[-1] = 0
    L = 2.0 * np.kron(D2, np.eye(m)) + 3.0 * np.kron(np.eye(n), E2)
    _check(pm.MPILaplacian((n, m), axes=(0, 1), weights=(2, 3), sampling=(1, 1)), L)
    G = pm.MPIGradient((n, m))
    xg = _rand(n * m, seed=3)
    g = G @ pm.DistributedArray.to_dist(xg)
    ref = [np.kron(_deriv_matrix(n, "centered"), np.eye(m)) @ xg,
           np.kron(np.eye(n), _deriv_matrix(m, "centered")) @ xg]
    for k in range(2):
        np.testing.assert_allclose(g[k].asarray(), ref[k], atol=1e-12)
    adj = G.H @ g
    np.testing.assert_allclose(adj.asarray(), sum(
        M.T @ r for M, r in zip([np.kron(_deriv_matrix(n, "centered"), np.eye(m)),
                                 np.kron(np.eye(n), _deriv_matrix(m, "centered"))], ref)), atol=1e-12)


def test_composites():
    A = _rand((3, 3), seed=7 + rank)
    Aall = comm.allgather(A)
    B = sl.block_diag(*Aall)
    Op = pm.MPIBlockDiag([A])
    Py = pm.MPIBlockDiag([LinearOperator((3, 3), matvec=lambda v: A @ v, rmatvec=lambda v: A.T @ v,
                                         dtype=np.float64)])
    _check(Op + Py, 2 * B)
    _check(Op - 0.5 * Py, 0.5 * B)
    _check(Op @ Py, B @ B)
    _check((Op * 3.0).H, 3 * B.T)
    _check(Op.T, B.T)
    _check(Op ** 2, B @ B)


def test_matrixmult_summa_and_block():
    p = math.isqrt(size)
    sub = comm.Split(color=0 if rank < p * p else 1, key=rank)
    if rank >= p * p:
        return
    N, K, M = 5, 4, 3
    A, X = _rand((N, K), seed=1), _rand((K, M), seed=2)
    row, col = rank // p, rank % p
    bn, bk = math.ceil(N / p), math.ceil(K / p)
    Aloc = A[row * bn:(row + 1) * bn, col * bk:(col + 1) * bk]
    Op = pm.MPIMatrixMult(Aloc, M, base_comm=sub, kind="summa")
    bm = math.ceil(M / p)
    xloc = X[row * bk:(row + 1) * bk, col * bm:(col + 1) * bm]
    x = pm.DistributedArray(global_shape=Op.shape[1], base_comm=sub,
                            local_shapes=sub.allgather((xloc.size,)))
    x.local_array[:] = xloc.ravel()
    y = Op @ x
    Y = A @ X
    yloc = Y[row * bn:(row + 1) * bn, col * bm:(col + 1) * bm]
    np.testing.assert_allclose(y.local_array, yloc.ravel(), rtol=1e-12)
    assert pm.dottest(Op, x, y.copy())


def test_dense_block_outlives_the_matrix():
    # a float32 block for a float64 operator is converted (a temporary); the operator that
    # remains (an adjoint of the block-diagonal) must not depend on it
    import gc
    A = (np.arange(6, dtype=np.float32).reshape(2, 3) + rank)
    ref = sl.block_diag(*comm.allgather(A.astype(np.float64))).T
    Op = pm.MPIBlockDiag([A], dtype=np.float64).H
    del A
    gc.collect()
    junk = [np.full((2, 3), 1e9) for _ in range(100)]   # reuse freed memory  # noqa: F841
    y = pm.DistributedArray.to_dist(np.ones(ref.shape[1]))
    np.testing.assert_allclose((Op @ y).asarray(), ref @ np.ones(ref.shape[1]))
