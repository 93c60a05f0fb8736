"""The names PyLops-MPI scripts import, with PyLops-MPI's signatures and results: the grid
helpers (halo_block_split, active_grid_comm, local_block_split, block_gather, subcomm_split),
MPIHalo's halo forms, plotting, utils.benchmark / mark, __version__, StackedDistributedArray's
printing and dot. References computed here from the reference's formulas."""
import math

import numpy as np
import pytest
from mpi4py import MPI

import pylopsmpi as pm
from pylopsmpi.basicoperators import (MPIHalo, halo_block_split, active_grid_comm,
                                      local_block_split, block_gather)
from pylopsmpi.DistributedArray import subcomm_split

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size


def _grids():
    out = [None, (size,)]
    if size % 2 == 0:
        out.append((2, size // 2))
    out.append((1, size))
    return out


@pytest.mark.parametrize("grid", _grids())
def test_halo_block_split(grid):
    dims = (5 * size + 1,) if grid in (None, (size,)) else (3 * size + 1, 2 * size + 3)
    g = grid if grid is not None else (1,) * (len(dims) - 1) + (size,)
    sl = halo_block_split(dims, comm, grid)
    coords = np.unravel_index(rank, g)
    for d, p, c, s in zip(dims, g, coords, sl):
        b = math.ceil(d / p)
        assert s.start == c * b
        assert s.stop == (None if c == p - 1 else min(c * b + b, d))
    # the blocks tile the array
    cover = np.zeros(dims, dtype=int)
    for blk in comm.allgather(sl):
        cover[blk] += 1
    assert np.all(cover == 1)
    with pytest.raises(ValueError):
        halo_block_split(dims, comm, (size + 1,) + (1,) * (len(dims) - 1))


def test_halo_forms_1d():
    """PyLops-MPI's halo forms: a number is trimmed at the grid boundary, a tuple is not."""
    dims = (4 * size,)
    x = pm.DistributedArray(global_shape=dims[0])
    x.local_array[:] = np.arange(dims[0])[halo_block_split(dims, comm)]
    trimmed = MPIHalo(dims, 1)(x)
    kept = MPIHalo(dims, (1,))(x)
    first, last = rank == 0, rank == size - 1
    assert trimmed.local_array.size == 4 + (not first) + (not last)
    assert kept.local_array.size == 6
    if first:
        assert kept.local_array[0] == 0        # the boundary's ghost cell is zero
    with pytest.raises(ValueError, match="Invalid halo length"):
        MPIHalo(dims, (1, 2, 3))
    with pytest.raises(ValueError, match="non-negative"):
        MPIHalo(dims, -1)
    with pytest.raises(ValueError, match="does not match comm size"):
        MPIHalo(dims, 1, proc_grid_shape=(size + 1,))
    xb = pm.DistributedArray(global_shape=dims[0], partition=pm.Partition.BROADCAST)
    with pytest.raises(ValueError, match="SCATTER|Scatter"):
        MPIHalo(dims, 1) @ xb


def test_matrixmult_helpers():
    N, M = 7, 5
    newc, r, row, col, active = active_grid_comm(comm, N, M)
    p = math.isqrt(size)
    assert (row, col) == divmod(rank, p)
    assert active == (row < min(N, M, p) and col < min(N, M, p))
    if active:
        assert newc.Get_size() == min(N, M, p) ** 2
    else:
        assert newc is None and r == rank
    if p * p != size:
        with pytest.raises(RuntimeError):
            local_block_split((N, M), rank, comm)
        return
    rs, cs = local_block_split((N, M), rank, comm)
    br, bc = math.ceil(N / p), math.ceil(M / p)
    pr, pc = divmod(rank, p)
    assert (rs.start, rs.stop) == (pr * br, min(pr * br + br, N))
    assert (cs.start, cs.stop) == (pc * bc, min(pc * bc + bc, M))
    with pytest.raises(ValueError):
        local_block_split((N, M), size, comm)
    glob = np.arange(N * M, dtype=float).reshape(N, M)
    blk = glob[rs, cs]
    x = pm.DistributedArray(global_shape=int(sum(comm.allgather(blk.size))),
                            local_shapes=comm.allgather((blk.size,)))
    x.local_array[:] = blk.ravel()
    np.testing.assert_array_equal(block_gather(x, (N, M), comm), glob)


def test_subcomm_split():
    mask = [r % 2 for r in range(size)]
    sub = subcomm_split(mask, comm)
    assert sub.Get_size() == sum(1 for m in mask if m == mask[rank])
    sub.Free()


def test_version_and_stacked():
    assert pm.__version__ == "%d.%d.%d" % pm.version()
    x = pm.DistributedArray.to_dist(np.arange(6.0))
    y = pm.DistributedArray.to_dist(np.arange(4.0) + 1j)
    s, t = pm.StackedDistributedArray([x, y]), pm.StackedDistributedArray([x, y.conj()])
    text = repr(s)
    assert text.startswith("<StackedDistributedArray with 2 distributed arrays:")
    assert text.count("<DistributedArray with global shape") == 2
    d = s.dot(t)
    assert isinstance(d, np.ndarray) and d.shape == (1,) and d.dtype == np.complex128
    want = np.dot(np.arange(6.0), np.arange(6.0)) + np.dot(np.arange(4.0) + 1j, np.arange(4.0) - 1j)
    np.testing.assert_allclose(d, [want])
    dv = s.dot(s, vdot=True)
    np.testing.assert_allclose(dv, [np.vdot(np.arange(6.0), np.arange(6.0))
                                    + np.vdot(np.arange(4.0) + 1j, np.arange(4.0) + 1j)])


def test_benchmark_and_mark(capsys):
    from pylopsmpi.utils.benchmark import benchmark, mark

    @benchmark(description="outer")
    def outer():
        mark("a")
        inner()
        mark("b")

    @benchmark
    def inner():
        return 1

    outer()
    out = capsys.readouterr().out
    if rank == 0:
        assert "[decorator]outer: total runtime" in out and "[decorator]inner" in out
        assert "a-->b" in out
    with pytest.raises(RuntimeError):
        mark("outside")
    assert pm.utils.benchmark is benchmark


def test_plotting():
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    x = pm.DistributedArray(global_shape=(4 * size, 3))
    x.local_array[:] = rank
    pm.plot_distributed_array(x)
    pm.plot_local_arrays(x, "local", vmin=0, vmax=size)
    with pytest.raises(TypeError):
        pm.plot_distributed_array(np.zeros(3))
    plt.close("all")
