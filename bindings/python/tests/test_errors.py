"""Bad input on one rank ends in the same exception on every rank; callback exceptions carry
the original on the rank where they happened."""
import numpy as np
import pytest
from mpi4py import MPI
from scipy.sparse.linalg import LinearOperator

import pylopsmpi as pm

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size


def test_differing_shapes_per_rank():
    # the last rank asks for another global shape: every rank raises the same ValueError
    n = 3 * size + (1 if rank == size - 1 and size > 1 else 0)
    shapes = None if size > 1 else [(2,)]
    with pytest.raises(ValueError) as e:
        pm.DistributedArray(global_shape=n, local_shapes=shapes)
    kinds = comm.allgather(type(e.value).__name__)
    assert len(set(kinds)) == 1, kinds
    if size > 1:
        assert "rank" in str(e.value), str(e.value)


def test_wrong_dtype():
    with pytest.raises(TypeError):
        pm.DistributedArray(global_shape=4, dtype=np.int32)
    x = pm.DistributedArray(global_shape=4, dtype=np.float32)
    y = pm.DistributedArray(global_shape=4, dtype=np.float64)
    with pytest.raises(pm.PylopsMPIError):
        x.dot(y)


def test_short_buffer_on_one_rank():
    # a local_array of the wrong shape on the last rank only: every rank raises ValueError
    x = pm.DistributedArray(global_shape=2 * size)
    bad = rank == size - 1
    with pytest.raises(ValueError):
        try:
            if bad:
                pm.DistributedArray(global_shape=2 * size, local_array=np.zeros(1))
        finally:
            flag = comm.allreduce(1 if bad else 0)
        if flag:
            raise ValueError("another rank failed")


def test_exception_in_callback_on_one_rank():
    class Boom(RuntimeError):
        pass

    def mv(v):
        if rank == size - 1:
            raise Boom("boom")
        return 2 * v

    Op = pm.MPIBlockDiag([LinearOperator((3, 3), matvec=mv, rmatvec=mv, dtype=np.float64)])
    x = pm.DistributedArray(global_shape=3 * size)
    x.local_array[:] = 1
    with pytest.raises(pm.CallbackError) as e:
        Op @ x
    if rank == size - 1:
        assert isinstance(e.value.original, Boom) and e.value.__cause__ is e.value.original
    else:
        assert e.value.original is None
    # the operator still works once the callback behaves
    Op2 = pm.MPIBlockDiag([LinearOperator((3, 3), matvec=lambda v: v, rmatvec=lambda v: v, dtype=np.float64)])
    np.testing.assert_allclose((Op2 @ x).asarray(), np.ones(3 * size))


def test_wrong_return_size_in_callback():
    Op = pm.MPIBlockDiag([LinearOperator((3, 3), matvec=lambda v: v[:2], rmatvec=lambda v: v,
                                         dtype=np.float64)])
    x = pm.DistributedArray(global_shape=3 * size)
    x.local_array[:] = 1
    with pytest.raises(pm.CallbackError):
        Op @ x


def test_context_manager_and_destroy():
    with pm.DistributedArray(global_shape=5) as x:
        x.local_array[:] = 1
    x.destroy()     # idempotent
    Op = pm.MPIBlockDiag([np.eye(2)])
    Op.destroy()
    Op.destroy()
