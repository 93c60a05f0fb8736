"""PyLops-MPI semantics where this package used to differ, against serial NumPy references
written here: masked BROADCAST reductions per group, and derivatives that follow PyLops' order
of operations (bit-equal to PyLops' formulas evaluated in NumPy)."""
import numpy as np
import pytest
from mpi4py import MPI

import pylopsmpi as pm

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size


def _split(n, P, r):
    return n // P + (1 if r < n % P else 0)


# --- masked BROADCAST reductions ----------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_masked_broadcast_dot_and_norm_per_group(dtype):
    """PyLops-MPI's dot of a masked BROADCAST array: to_dist (the default split over every rank),
    then a sum over the caller's mask group; the SCATTER array with the same mask gives the
    same. The norm follows the same rule here (norm^2 = vdot)."""
    mask = [r % 2 for r in range(size)]
    n = 4 if size <= 4 else size
    ones = pm.DistributedArray.to_dist(np.ones(n), partition=pm.Partition.BROADCAST, mask=mask)
    mine = sum(_split(n, size, r) for r in range(size) if mask[r] == mask[rank])
    assert ones.dot(ones)[0] == mine          # ones(4), mask [0, 1], 2 ranks: 2.0 per group
    rng = np.random.default_rng(4)
    g = rng.standard_normal((7, 3))
    if np.issubdtype(dtype, np.complexfloating):
        g = g + 1j * rng.standard_normal((7, 3))
    h = np.cos(g)
    rows = [r for r in range(size) if mask[r] == mask[rank]]
    start = np.cumsum([0] + [_split(7, size, r) for r in range(size)])
    sel = np.concatenate([np.arange(start[r], start[r + 1]) for r in rows])
    for part in (pm.Partition.BROADCAST, pm.Partition.UNSAFE_BROADCAST, pm.Partition.SCATTER):
        x = pm.DistributedArray.to_dist(g, partition=part, mask=mask)
        y = pm.DistributedArray.to_dist(h, partition=part, mask=mask)
        np.testing.assert_allclose(x.dot(y)[0], np.dot(g[sel].ravel(), h[sel].ravel()), rtol=1e-13)
        np.testing.assert_allclose(x.dot(y, vdot=True)[0], np.vdot(g[sel], h[sel]), rtol=1e-13)
        for ord in (None, 1, np.inf, 3):
            np.testing.assert_allclose(x.norm(ord)[0], np.linalg.norm(g[sel].ravel(), ord), rtol=1e-13)
