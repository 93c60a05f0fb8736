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


def _same_everywhere(exc):
    """The exception class is the same on every rank."""
    kinds = comm.allgather(type(exc).__name__)
    assert len(set(kinds)) == 1, kinds


def test_wrong_dtype():
    with pytest.raises(TypeError):
        pm.DistributedArray(global_shape=4, dtype=np.int32)
    x = pm.DistributedArray(global_shape=4, dtype=np.float32)
    y = pm.DistributedArray(global_shape=4, dtype=np.float64)
    x[:] = 1
    y[:] = 2
    assert x.dot(y).dtype == np.float64          # NumPy's promotion, as PyLops-MPI
    with pytest.raises(pm.PylopsMPIError):       # in place into the narrower dtype: refused
        x += y


def test_wrong_dtype_on_one_rank():
    # an unsupported dtype on the last rank only: TypeError on every rank
    dt = np.int32 if rank == size - 1 else np.float64
    with pytest.raises(TypeError) as e:
        pm.DistributedArray(global_shape=4, dtype=dt)
    _same_everywhere(e.value)
    # a supported dtype that differs on one rank: the library's dot finds it
    dt = np.float32 if rank == size - 1 else np.float64
    x = pm.DistributedArray(global_shape=4, dtype=dt)
    x.local_array[:] = 1
    if size > 1:
        with pytest.raises(pm.PylopsMPIError) as e:
            x.dot(x)
        _same_everywhere(e.value)


def test_short_buffer_on_one_rank():
    # a local_array of the wrong shape on the last rank only: every rank raises ValueError
    n = 2 * size
    local = np.zeros(1 if rank == size - 1 else 2)
    with pytest.raises(ValueError) as e:
        pm.DistributedArray(global_shape=n, local_array=local)
    _same_everywhere(e.value)
    if rank != size - 1:
        assert f"on rank {size - 1}" in str(e.value), str(e.value)
    # the good case still works afterwards
    x = pm.DistributedArray(global_shape=n, local_array=np.full(2, float(rank)))
    np.testing.assert_allclose(x.asarray(), np.repeat(np.arange(size, dtype=float), 2))


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


def test_bad_local_operator_on_one_rank():
    # the last rank gives something that is not a linear operator: every rank raises
    op = object() if rank == size - 1 else np.eye(2)
    with pytest.raises(Exception) as e:
        pm.MPIBlockDiag([op])
    _same_everywhere(e.value)
    with pytest.raises(Exception) as e:
        pm.MPILinearOperator(op)
    _same_everywhere(e.value)


def test_bad_operator_argument_on_one_rank():
    kind = "sideways" if rank == size - 1 else "centered"
    with pytest.raises(NotImplementedError) as e:
        pm.MPIFirstDerivative((4 * size, 3), kind=kind)
    _same_everywhere(e.value)
    # differing dims per rank: the library's agreement reports them
    dims = (4 * size + (1 if rank == size - 1 and size > 1 else 0), 3)
    if size > 1:
        with pytest.raises(pm.PylopsMPIError) as e:
            pm.MPISecondDerivative(dims)
        _same_everywhere(e.value)


def test_bad_ghost_cells_on_one_rank():
    x = pm.DistributedArray.to_dist(np.arange(4.0 * size))
    front = -1 if rank == size - 1 else 1
    with pytest.raises(pm.PylopsMPIError) as e:
        x.add_ghost_cells(cells_front=front)
    _same_everywhere(e.value)
