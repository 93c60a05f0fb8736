"""DistributedArray and StackedDistributedArray against NumPy, at any rank count."""
import numpy as np
import pytest
from mpi4py import MPI

import pylopsmpi as pm

comm = MPI.COMM_WORLD
DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


def _global(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    g = rng.standard_normal(shape)
    if np.iscomplexobj(np.zeros(1, dtype)):
        g = g + 1j * rng.standard_normal(shape)
    return g.astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,axis", [((7,), 0), ((2,), 0), ((5, 3), 0), ((4, 6), 1), ((3, 4, 5), 2)])
def test_to_dist_asarray_arith(shape, axis, dtype):
    g = _global(shape, dtype)
    x = pm.DistributedArray.to_dist(g, axis=axis)
    tol = 1e-5 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-12
    assert x.local_shapes == [pm.local_split(shape, comm, pm.Partition.SCATTER, axis) if False else s
                              for s in comm.allgather(x.local_shape)]
    np.testing.assert_allclose(x.asarray(), g)
    np.testing.assert_allclose((x + x * 2).asarray(), 3 * g, rtol=tol)
    np.testing.assert_allclose((x - x.conj()).asarray(), g - g.conj(), rtol=tol, atol=tol)
    np.testing.assert_allclose((-x).asarray(), -g)
    np.testing.assert_allclose(x.dot(x)[0], np.sum(g.ravel() * g.ravel()), rtol=tol * 10)
    np.testing.assert_allclose(x.dot(x, vdot=True)[0], np.vdot(g, g), rtol=tol * 10)
    for o in (None, 1, 2, np.inf, -np.inf, 0, 3):
        np.testing.assert_allclose(x.norm(o)[0], np.linalg.norm(g.ravel(), o), rtol=tol * 10)
    z = x.zeros_like()
    assert np.all(z.asarray() == 0) and z.dtype == x.dtype


def test_local_array_is_zero_copy_view():
    x = pm.DistributedArray(global_shape=(10, 2))
    x.local_array[...] = comm.rank
    r = np.repeat(np.arange(comm.size), [s[0] for s in x.local_shapes])
    np.testing.assert_array_equal(x.asarray()[:, 0], r)
    mine = np.arange(np.prod(x.local_shape), dtype=np.float64).reshape(x.local_shape)
    y = pm.DistributedArray(global_shape=(10, 2), local_array=mine)
    assert y.local_array is mine


def test_redistribute_ravel_ghosts_norm_axis():
    g = _global((9, 5), np.float64)
    x = pm.DistributedArray.to_dist(g)
    np.testing.assert_allclose(x.redistribute(1).asarray(), g)
    np.testing.assert_allclose(x.ravel().asarray(), g.ravel())
    np.testing.assert_allclose(x.norm(axis=0), np.linalg.norm(g, axis=0))
    np.testing.assert_allclose(x.norm(axis=1), np.linalg.norm(g, axis=1))
    off = sum(s[0] for s in x.local_shapes[:comm.rank])
    n = x.local_shape[0]
    if all(s[0] >= 1 for s in x.local_shapes):
        gh = x.add_ghost_cells(1, 1)
        lo, hi = max(off - 1, 0), min(off + n + 1, 9)
        np.testing.assert_allclose(gh, g[lo:hi])


def test_broadcast_and_mask():
    g = np.arange(6.0)
    x = pm.DistributedArray.to_dist(g, partition=pm.Partition.BROADCAST)
    np.testing.assert_allclose(x.local_array, g)
    np.testing.assert_allclose(x.dot(x)[0], g @ g)
    mask = [r % 2 for r in range(comm.size)]
    y = pm.DistributedArray(global_shape=4 * comm.size, mask=mask)
    y.local_array[:] = 1.0
    nsub = sum(1 for m in mask if m == mask[comm.rank])
    np.testing.assert_allclose(y.dot(y)[0], 4 * nsub)
    assert y.asarray(masked=True).shape == (4 * nsub,)


def test_stacked():
    a, b = _global((7,), np.float64, 1), _global((4, 3), np.float64, 2)
    s = pm.StackedDistributedArray([pm.DistributedArray.to_dist(a), pm.DistributedArray.to_dist(b)])
    full = np.concatenate([a, b.ravel()])
    np.testing.assert_allclose(s.asarray(), full)
    np.testing.assert_allclose((s + s * 2.0).asarray(), 3 * full)
    np.testing.assert_allclose(s.dot(s), full @ full)
    np.testing.assert_allclose(s.norm(), np.linalg.norm(full))
    np.testing.assert_allclose(s.norm(1), np.linalg.norm(full, 1))
    assert np.all(s.zeros_like().asarray() == 0)
