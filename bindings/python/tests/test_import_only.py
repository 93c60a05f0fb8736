"""A script written for PyLops-MPI runs after changing only its import line.

Everything below the marked import block is PyLops-MPI code (SciPy operators where PyLops ones
would be: scipy.sparse.linalg.aslinearoperator for pylops.MatrixMult, a SciPy LinearOperator for
a PyLops operator without a matrix), using PyLops-MPI's module paths; each result is compared
with a serial NumPy/SciPy reference.
"""
import numpy as np
import scipy.linalg as sl
from mpi4py import MPI
from scipy.sparse.linalg import LinearOperator, aslinearoperator

# --- the only change: `import pylops_mpi` becomes ----------------------------------------------
import pylopsmpi as pylops_mpi
# ------------------------------------------------------------------------------------------------
# (PyLops-MPI's submodules, reached as a script reaches them through `pylops_mpi.`)
DistributedArray = pylops_mpi.DistributedArray
Partition = pylops_mpi.DistributedArray.Partition
local_split = pylops_mpi.local_split
MPIBlockDiag = pylops_mpi.basicoperators.BlockDiag.MPIBlockDiag
MPIVStack = pylops_mpi.basicoperators.VStack.MPIVStack
MPIStackedVStack = pylops_mpi.basicoperators.VStack.MPIStackedVStack
MPIFirstDerivative = pylops_mpi.basicoperators.FirstDerivative.MPIFirstDerivative
cg = pylops_mpi.optimization.basic.cg
cgls = pylops_mpi.optimization.basic.cgls
CGLS = pylops_mpi.optimization.cls_basic.CGLS
ista = pylops_mpi.optimization.sparsity.ista
fista = pylops_mpi.optimization.sparsity.fista
power_iteration = pylops_mpi.optimization.eigs.power_iteration
dottest = pylops_mpi.utils.dottest

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()


def test_module_paths_are_pylops_mpis():
    from pylopsmpi.DistributedArray import DistributedArray as D, Partition as P
    from pylopsmpi.optimization.cls_sparsity import ISTA, FISTA
    from pylopsmpi.utils.dottest import dottest as dt
    assert D is DistributedArray and P is Partition and dt is dottest
    assert ISTA is pylops_mpi.optimization.ISTA and FISTA is pylops_mpi.optimization.FISTA
    assert pylops_mpi.DistributedArray.Partition is Partition is pylops_mpi.Partition
    assert pylops_mpi.optimization.basic.cgls is cgls is pylops_mpi.cgls
    assert pylops_mpi.optimization.sparsity.fista is fista is pylops_mpi.fista
    assert pylops_mpi.utils.dottest is dottest
    assert pylops_mpi.basicoperators.MPIBlockDiag is MPIBlockDiag is pylops_mpi.MPIBlockDiag
    assert pylops_mpi.MPILinearOperator is pylops_mpi.LinearOperator.MPILinearOperator


def _numpy_cgls(A, y, niter, tol):
    """The serial reference: CGLS as PyLops writes it (x0 = 0, no damping); x and ||r||."""
    x = np.zeros(A.shape[1])
    s = y.copy()
    c = A.T @ s
    q = A @ c
    kold = c @ c
    cost = [np.linalg.norm(s)]
    for _ in range(niter):
        if kold <= tol:
            break
        a = kold / (q @ q)
        x = x + a * c
        s = s - a * q
        r = A.T @ s
        k = r @ r
        c = r + (k / kold) * c
        q = A @ c
        kold = k
        cost.append(np.linalg.norm(s))
    return x, np.array(cost)


def test_plot_cgls_example():
    # PyLops-MPI's examples/plot_cgls.py (float64: float128 is not a library dtype)
    np.random.seed(42 + rank)
    N, M = 20, 15
    A = np.random.normal(0, 1, (N, M))
    Mop = aslinearoperator(A)                    # pylops.MatrixMult(A)
    BDiag = pylops_mpi.MPIBlockDiag(ops=[Mop, ], dtype=np.float64)
    x = pylops_mpi.DistributedArray(size * M, dtype=np.float64)
    x[:] = np.ones(M)
    y = BDiag @ x
    x0 = pylops_mpi.DistributedArray(BDiag.shape[1], dtype=np.float64)
    x0[:] = 0
    xinv, istop, niter, r1norm, r2norm, cost = pylops_mpi.cgls(BDiag, y, x0=x0, niter=15, tol=1e-10)
    xinv_array = xinv.asarray()
    B = sl.block_diag(*comm.allgather(A))
    np.testing.assert_allclose(y.asarray(), B @ np.ones(size * M), rtol=1e-12)
    xr, costr = _numpy_cgls(B, B @ np.ones(size * M), 15, 1e-10)
    assert niter == len(costr) - 1 and len(cost) == niter + 1
    # (the last steps run at residuals near round-off, where summation order shows)
    np.testing.assert_allclose(xinv_array, xr, rtol=1e-6, atol=1e-10)
    np.testing.assert_allclose(cost, costr, rtol=1e-6, atol=1e-6 * costr[0])
    assert dottest(BDiag, x, y)


def test_regularised_inversion_with_derivative():
    # model smoothing: min ||x - d||^2 + eps ||D2 x||^2 with a VStack of BROADCAST identities
    # is replaced here by the scattered form [I; sqrt(eps) D2] solved by CGLS, as in
    # PyLops-MPI's post-stack tutorial
    n = 10 * size + 3
    rng = np.random.default_rng(3)
    d = np.sin(np.linspace(0, 3, n)) + 0.1 * rng.standard_normal(n)
    eps = 2.0
    D2 = pylops_mpi.basicoperators.SecondDerivative.MPISecondDerivative(dims=(n,), dtype=np.float64)
    Iop = pylops_mpi.MPIBlockDiag([np.eye(local_split((n,), comm, Partition.SCATTER, 0)[0])])
    Op = pylops_mpi.MPIStackedVStack([Iop, np.sqrt(eps) * D2])
    dd = pylops_mpi.DistributedArray.to_dist(d)
    y = pylops_mpi.StackedDistributedArray([dd, dd.zeros_like()])
    x0 = dd.zeros_like()
    xinv = cgls(Op, y, x0, niter=300, tol=1e-26)[0]
    D2d = np.diag(-2.0 * np.ones(n)) + np.diag(np.ones(n - 1), 1) + np.diag(np.ones(n - 1), -1)
    D2d[0, :] = D2d[-1, :] = 0                 # PyLops' SecondDerivative: no edges
    ref = np.linalg.solve(np.eye(n) + eps * D2d.T @ D2d, d)
    np.testing.assert_allclose(xinv.asarray(), ref, rtol=1e-7, atol=1e-9)


def test_sparse_recovery_with_fista_and_broadcast_operator():
    # every rank has the same problem (BROADCAST), as with pylops_mpi.MPILinearOperator(Op)
    rng = np.random.default_rng(7)
    A = rng.standard_normal((30, 40))
    xt = np.zeros(40)
    xt[[3, 17, 31]] = [1.0, -2.0, 1.5]
    Op = pylops_mpi.asmpilinearoperator(aslinearoperator(A))
    y = pylops_mpi.DistributedArray.to_dist(A @ xt, partition=Partition.BROADCAST)
    x0 = pylops_mpi.DistributedArray(40, partition=Partition.BROADCAST)
    x0[:] = 0
    eig = np.max(np.linalg.eigvalsh(A.T @ A))
    xf, nit, cost = fista(Op, y, x0, niter=100, eps=0.1, alpha=1.0 / eig, tol=0)
    # the same FISTA in NumPy
    x = z = np.zeros(40)
    t = 1.0
    for _ in range(100):
        xold = x
        u = z + A.T @ (A @ xt - A @ z) / eig
        x = np.maximum(np.abs(u) - 0.1 * 0.5 / eig, 0) * np.sign(u)
        told, t = t, (1 + np.sqrt(1 + 4 * t * t)) / 2
        z = x + (x - xold) * (told - 1) / t
    np.testing.assert_allclose(xf.asarray(), x, rtol=1e-8, atol=1e-10)
    assert nit == 100 and len(cost) == 100
    xi = ista(Op, y, x0, niter=20, eps=0.1, alpha=1.0 / eig, tol=0)[0]
    assert np.linalg.norm(A @ xi.asarray() - A @ xt) < np.linalg.norm(A @ xt)
    lam = power_iteration(Op.H @ Op, x0.copy(), niter=200, tol=1e-10)[0]
    assert abs(abs(lam) - eig) < 1e-3 * eig


def test_cg_and_cgls_class_on_python_callback_blocks():
    rng = np.random.default_rng(11 + rank)
    S = rng.standard_normal((5, 5))
    S = S @ S.T + 5 * np.eye(5)
    Sop = LinearOperator((5, 5), matvec=lambda v: S @ v, rmatvec=lambda v: S @ v, dtype=np.float64)
    Op = MPIBlockDiag([Sop])
    b = np.arange(5.0 * size)
    y = DistributedArray.to_dist(b)
    x0 = DistributedArray(5 * size)
    x0[:] = 0
    Sall = sl.block_diag(*comm.allgather(S))
    x = cg(Op, y, x0, niter=100, tol=1e-20)[0]
    np.testing.assert_allclose(x.asarray(), np.linalg.solve(Sall, b), rtol=1e-9)
    solver = CGLS(Op)
    x = solver.solve(y, x0, niter=100, tol=1e-20)[0]
    np.testing.assert_allclose(x.asarray(), np.linalg.solve(Sall, b), rtol=1e-8)
    D = MPIFirstDerivative((5 * size, 2), kind="forward")
    u = DistributedArray.to_dist(np.arange(10.0 * size))
    v = DistributedArray.to_dist(np.ones(10 * size))
    assert dottest(D, u, v)
    assert isinstance(MPIVStack([np.eye(2)]), pylops_mpi.MPILinearOperator)
