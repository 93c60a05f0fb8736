"""Applies, solves and dots whose input differs on one rank (another global shape, partition,
split, dtype or type) end in the same exception class on every rank, never a hang; inputs that
differ from the operator's layout alike on every rank are converted, with results equal to a
serial reference."""
import numpy as np
import pytest
from mpi4py import MPI
from scipy.sparse.linalg import LinearOperator

import pylopsmpi as pm

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
last = size - 1


def _same_everywhere(exc):
    kinds = comm.allgather(type(exc).__name__)
    assert len(set(kinds)) == 1, kinds


def _blockdiag(n=4):
    """A block-diagonal of n x n blocks (rank r's block is A_r) and the dense global matrix."""
    blocks = [np.arange(n * n, dtype=np.float64).reshape(n, n) + 10 * r + np.eye(n)
              for r in range(size)]
    full = np.zeros((n * size, n * size))
    for r, b in enumerate(blocks):
        full[r * n:(r + 1) * n, r * n:(r + 1) * n] = b
    return pm.MPIBlockDiag([blocks[rank]]), full


def _raises_everywhere(fn, cls=ValueError):
    with pytest.raises(cls) as e:
        fn()
    _same_everywhere(e.value)
    return e.value


def _python_op(n):
    """An operator defined in Python (applied in Python, not by the library)."""
    class Twice(pm.MPILinearOperator):
        def _matvec(self, x):
            return x * 2.0

        def _rmatvec(self, x):
            return x * 2.0
    return Twice(shape=(n, n), dtype=np.float64)


@pytest.mark.parametrize("adjoint", [False, True])
def test_apply_other_global_shape_on_one_rank(adjoint):
    Op, _ = _blockdiag()
    n = Op.shape[1]
    good = pm.DistributedArray.to_dist(np.ones(n))
    bad = pm.DistributedArray.to_dist(np.ones(n + 1))
    x = bad if rank == last else good
    fn = Op.rmatvec if adjoint else Op.matvec
    _raises_everywhere(lambda: fn(x))
    _raises_everywhere(lambda: Op @ x if not adjoint else Op.H @ x)
    # the operator still works afterwards (nothing left half-done)
    y = fn(good)
    assert np.allclose(y.asarray(), (Op.H if adjoint else Op).matvec(good).asarray())


def test_apply_other_partition_on_one_rank():
    Op, _ = _blockdiag()
    n = Op.shape[1]
    scatter = pm.DistributedArray.to_dist(np.ones(n))
    bcast = pm.DistributedArray.to_dist(np.ones(n), partition=pm.Partition.BROADCAST)
    x = bcast if rank == last else scatter
    if size > 1:
        _raises_everywhere(lambda: Op.matvec(x))
    else:
        assert np.allclose(Op.matvec(x).asarray(), Op.matvec(scatter).asarray())


def test_apply_other_split_on_one_rank():
    # the same global shape, another split on the last rank's argument
    Op, full = _blockdiag()
    n = Op.shape[1]
    g = np.arange(n, dtype=np.float64)
    even = pm.DistributedArray.to_dist(g)
    shapes = [(n,)] + [(0,)] * (size - 1)
    skew = pm.DistributedArray.to_dist(g, local_shapes=shapes)
    x = skew if rank == last else even
    if size > 1:
        _raises_everywhere(lambda: Op.matvec(x))
    # every rank with the other split: converted, and the result right
    y = Op.matvec(skew)
    assert np.allclose(y.asarray(), full @ g)


def test_apply_other_dtype_on_one_rank():
    Op, full = _blockdiag()
    n = Op.shape[1]
    g = np.arange(n, dtype=np.float64)
    x64 = pm.DistributedArray.to_dist(g)
    x32 = pm.DistributedArray.to_dist(g.astype(np.float32))
    x = x32 if rank == last else x64
    if size > 1:
        _raises_everywhere(lambda: Op.matvec(x))
    # float32 on every rank: converted to the operator's dtype
    y = Op.matvec(x32)
    assert y.dtype == np.float64
    assert np.allclose(y.asarray(), full @ g)


def test_apply_other_type_on_one_rank():
    Op, _ = _blockdiag()
    n = Op.shape[1]
    good = pm.DistributedArray.to_dist(np.ones(n))
    for other in (np.ones(n), pm.StackedDistributedArray([good]), None):
        x = other if rank == last else good
        if size == 1 and isinstance(other, pm.StackedDistributedArray):
            continue      # a stack of one member is a valid input
        _raises_everywhere(lambda: Op.matvec(x))
        _raises_everywhere(lambda: Op.dot(x))


def test_apply_stack_of_one_member():
    Op, full = _blockdiag()
    g = np.arange(Op.shape[1], dtype=np.float64)
    x = pm.StackedDistributedArray([pm.DistributedArray.to_dist(g)])
    assert np.allclose(Op.matvec(x).asarray(), full @ g)


def test_stacked_operator_other_member_on_one_rank():
    Op, _ = _blockdiag()
    S = pm.MPIStackedVStack([Op, Op])
    n = Op.shape[1]
    good = pm.DistributedArray.to_dist(np.arange(n, dtype=np.float64))
    bad = pm.DistributedArray.to_dist(np.arange(n + 1, dtype=np.float64))
    x = bad if rank == last else good
    _raises_everywhere(lambda: S.matvec(x))
    ys = S.matvec(good)
    two = pm.StackedDistributedArray([ys[0], ys[1]]) if rank != last else \
        pm.StackedDistributedArray([ys[0]])
    _raises_everywhere(lambda: S.rmatvec(two))


def test_python_operator_other_shape_on_one_rank():
    n = 2 * size + 1
    Op = _python_op(n)
    good = pm.DistributedArray.to_dist(np.ones(n))
    bad = pm.DistributedArray.to_dist(np.ones(n + 1))
    x = bad if rank == last else good
    _raises_everywhere(lambda: Op.matvec(x))
    _raises_everywhere(lambda: Op.rmatvec(x))
    assert np.allclose(Op.matvec(good).asarray(), 2.0)
    # a composite applied in Python over a library operator
    L, full = _blockdiag()
    C = L + _python_op(L.shape[0])
    gx = pm.DistributedArray.to_dist(np.ones(L.shape[1]))
    bx = pm.DistributedArray.to_dist(np.ones(L.shape[1] + 2))
    _raises_everywhere(lambda: C.matvec(bx if rank == last else gx))
    assert np.allclose(C.matvec(gx).asarray(), full @ np.ones(L.shape[1]) + 2.0)


def test_shell_operator_other_shape_on_one_rank():
    n = 2 * size + 1
    S = pm.MPIShellOperator((n, n), matvec=lambda x: x * 3.0, rmatvec=lambda x: x * 3.0)
    good = pm.DistributedArray.to_dist(np.ones(n))
    bad = pm.DistributedArray.to_dist(np.ones(n + 1))
    _raises_everywhere(lambda: S.matvec(bad if rank == last else good))
    assert np.allclose(S.matvec(good).asarray(), 3.0)


def test_callback_operator_error_not_retried():
    # an exception in a Python block on one rank: CallbackError everywhere, the block ran once
    n = 3
    calls = []

    def mv(v):
        calls.append(1)
        if rank == last:
            raise RuntimeError("boom")
        return v
    Op = pm.MPIBlockDiag([LinearOperator((n, n), matvec=mv, rmatvec=mv, dtype=np.float64)])
    x = pm.DistributedArray.to_dist(np.ones(n * size))
    _raises_everywhere(lambda: Op.matvec(x), pm.CallbackError)
    assert len(calls) == 1


@pytest.mark.parametrize("solver", ["cg", "cgls"])
def test_solver_other_shape_on_one_rank(solver):
    Op, full = _blockdiag()
    n = Op.shape[1]
    A = full.T @ full if solver == "cg" else full
    Op = Op.H @ Op if solver == "cg" else Op
    xtrue = np.arange(n, dtype=np.float64)
    y = pm.DistributedArray.to_dist(A @ xtrue)
    x0 = pm.DistributedArray.to_dist(np.zeros(n))
    bad = pm.DistributedArray.to_dist(np.zeros(n + 1))
    fn = getattr(pm, solver)
    _raises_everywhere(lambda: fn(Op, y, bad if rank == last else x0, niter=3))
    ybad = pm.DistributedArray.to_dist(np.zeros(n + 2))
    _raises_everywhere(lambda: fn(Op, ybad if rank == last else y, x0, niter=3))
    # another split of x0 on every rank: converted, solved
    shapes = [(n,)] + [(0,)] * (size - 1)
    xs = pm.DistributedArray.to_dist(np.zeros(n), local_shapes=shapes)
    x = fn(Op, y, xs, niter=4 * n, tol=0.0)[0]
    assert np.allclose(x.asarray(), xtrue, atol=1e-6)
    assert np.allclose(xs.asarray(), 0.0)     # x0 untouched


def test_dot_other_layout_on_one_rank():
    n = 2 * size + 1
    a = pm.DistributedArray.to_dist(np.ones(n))
    b = pm.DistributedArray.to_dist(np.ones(n + 1))
    c = pm.DistributedArray.to_dist(np.ones(n), partition=pm.Partition.BROADCAST)
    if size > 1:
        _raises_everywhere(lambda: a.dot(b if rank == last else a), pm.PylopsMPIError)
        _raises_everywhere(lambda: a.dot(c if rank == last else a), pm.PylopsMPIError)
    # not an array on one rank: the same class everywhere
    e = _raises_everywhere(lambda: a.dot(np.ones(n) if rank == last else a), pm.PylopsMPIError)
    if rank != last:
        assert f"rank {last}" in str(e)
    assert np.allclose(a.dot(a), n)


def test_stacked_dot_other_members_on_one_rank():
    n = 2 * size + 1
    a = pm.DistributedArray.to_dist(np.ones(n))
    b = pm.DistributedArray.to_dist(np.ones(n + 1))
    s = pm.StackedDistributedArray([a, a])
    t = pm.StackedDistributedArray([a, b]) if rank == last else s
    _raises_everywhere(lambda: s.dot(t))
    u = pm.StackedDistributedArray([a]) if rank == last else s
    _raises_everywhere(lambda: s.dot(u))
    assert np.isclose(s.dot(s), 2 * n)


def test_arithmetic_other_layout_on_one_rank():
    # element-wise arithmetic is local: a mismatch raises on the rank that has it, nothing waits
    n = 2 * size + 1
    a = pm.DistributedArray.to_dist(np.ones(n))
    b = pm.DistributedArray.to_dist(np.ones(n + 1))
    other = b if rank == last else a
    if rank == last:
        with pytest.raises(pm.PylopsMPIError):
            a + other
    else:
        assert np.allclose((a + other).local_array, 2.0)
    comm.Barrier()
