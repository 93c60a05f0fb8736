"""Solvers against SciPy/NumPy references; the class forms match the functions."""
import numpy as np
import scipy.linalg as sl
from mpi4py import MPI
from scipy.sparse.linalg import LinearOperator

import pylopsmpi as pm

comm = MPI.COMM_WORLD
rank = comm.rank


def _problem(seed=0, n=6, m=4):
    rng = np.random.default_rng(seed + rank)
    A = rng.standard_normal((n, m)) + 3 * np.eye(n, m)
    Aall = comm.allgather(A)
    return A, sl.block_diag(*Aall)


def test_cgls_matches_lstsq_native_and_class():
    A, B = _problem()
    xt = np.arange(B.shape[1], dtype=float)
    y = pm.DistributedArray.to_dist(B @ xt)
    x0 = pm.DistributedArray(global_shape=B.shape[1])
    x0.local_array[:] = 0
    Op = pm.MPIBlockDiag([A])
    out = pm.cgls(Op, y, x0, niter=200, tol=1e-20)
    assert len(out) == 6
    np.testing.assert_allclose(out[0].asarray(), np.linalg.lstsq(B, B @ xt, rcond=None)[0], rtol=1e-8, atol=1e-10)
    x, istop, it, r1, r2, cost = pm.optimization.CGLS(Op).solve(y, x0, niter=5, tol=0.0)
    xn, istopn, itn, r1n, r2n, costn = pm.cgls(Op, y, x0, niter=5, tol=0.0)
    assert it == itn == 5 and istop == istopn
    np.testing.assert_allclose(x.asarray(), xn.asarray(), rtol=1e-9)
    np.testing.assert_allclose(cost, costn, rtol=1e-9)
    np.testing.assert_allclose([r1, r2], [r1n, r2n], rtol=1e-8)


def test_cg_python_operator_and_callback():
    A, B = _problem(5, 4, 4)
    S = A.T @ A
    Sall = sl.block_diag(*comm.allgather(S))
    Op = pm.MPIBlockDiag([LinearOperator(S.shape, matvec=lambda v: S @ v, rmatvec=lambda v: S @ v,
                                         dtype=np.float64)])
    b = np.ones(Sall.shape[0])
    y = pm.DistributedArray.to_dist(b)
    x0 = y.zeros_like()
    seen = []
    x, it, cost = pm.cg(Op, y, x0, niter=100, tol=1e-24, callback=lambda xi: seen.append(1))
    np.testing.assert_allclose(x.asarray(), np.linalg.solve(Sall, b), rtol=1e-8)
    assert len(seen) == it and cost.shape == (it + 1,)


def test_ista_fista_decrease_cost_and_power_iteration():
    A, B = _problem(9, 5, 8)
    Op = pm.MPIBlockDiag([A])
    xt = np.zeros(B.shape[1])
    xt[::5] = 1.0
    y = pm.DistributedArray.to_dist(B @ xt)
    x0 = pm.DistributedArray(global_shape=B.shape[1])
    x0.local_array[:] = 0
    eig = np.max(np.linalg.eigvalsh(B.T @ B))
    lam, _, _ = pm.power_iteration(Op.H @ Op, x0.copy(), niter=300, tol=0)
    assert abs(abs(lam) - eig) < 1e-3 * eig
    for solver in (pm.ista, pm.fista):
        x, it, cost = solver(Op, y, x0, niter=50, eps=1e-2, alpha=1.0 / eig, tol=0)
        assert it == 50 and cost[-1] < cost[0]
    # the same steps in NumPy (ISTA with soft thresholding)
    xr = np.zeros(B.shape[1])
    for _ in range(50):
        u = xr + (B.T @ (B @ xt - B @ xr)) / eig
        xr = np.maximum(np.abs(u) - 1e-2 * 0.5 / eig, 0) * np.sign(u)
    x, _, _ = pm.ista(Op, y, x0, niter=50, eps=1e-2, alpha=1.0 / eig, tol=0)
    np.testing.assert_allclose(x.asarray(), xr, rtol=1e-8, atol=1e-12)


def test_show_prints_table_on_rank0(capsys):
    A, B = _problem()
    Op = pm.MPIBlockDiag([A])
    y = pm.DistributedArray.to_dist(np.ones(B.shape[0]))
    x0 = pm.DistributedArray(global_shape=B.shape[1])
    x0.local_array[:] = 0
    pm.cgls(Op, y, x0, niter=3, show=True)
    out = capsys.readouterr().out
    if rank == 0:
        assert "CGLS" in out and "r1norm" in out and "Iterations = 3" in out
    else:
        assert out == ""


def test_path_choice_agreed_when_one_rank_differs(capsys):
    """show=True, a callback or damp on the last rank only: cg/cgls pick one path on every rank
    (the Python iterations), so no rank waits in the library's solver for the others; the
    results equal the all-native solve."""
    A, B = _problem(3)
    Op = pm.MPIBlockDiag([A])
    y = pm.DistributedArray.to_dist(B @ np.arange(B.shape[1], dtype=float))
    x0 = pm.DistributedArray(global_shape=B.shape[1])
    x0.local_array[:] = 0
    want = pm.cgls(Op, y, x0, niter=8, tol=0.0)[0].asarray()
    last = rank == comm.size - 1
    x = pm.cgls(Op, y, x0, niter=8, tol=0.0, show=last)[0]
    np.testing.assert_allclose(x.asarray(), want, rtol=1e-10)
    seen = []
    x = pm.cgls(Op, y, x0, niter=8, tol=0.0, callback=(lambda xi: seen.append(1)) if last else None)[0]
    np.testing.assert_allclose(x.asarray(), want, rtol=1e-10)
    assert len(seen) == (8 if last else 0)
    # damp differs too: the Python CGLS runs everywhere (damp's value is the user's business)
    x = pm.cgls(Op, y, x0, niter=8, tol=0.0, damp=1e-30 if last else 0.0)[0]
    np.testing.assert_allclose(x.asarray(), want, rtol=1e-8)
    S = pm.MPIBlockDiag([A.T @ A])
    b = x0.copy()
    b.local_array[:] = 1.0
    wcg = pm.cg(S, b, x0, niter=6, tol=0.0)[0].asarray()
    xcg = pm.cg(S, b, x0, niter=6, tol=0.0, show=last)[0]
    np.testing.assert_allclose(xcg.asarray(), wcg, rtol=1e-10)
    capsys.readouterr()
