r"""
Distributed arrays: the basics
==============================
A :class:`pylopsmpi.DistributedArray` is one global NumPy array split over the ranks of an MPI
communicator. Each rank holds its piece, ``local_array``, a plain NumPy array that the C library
works on in place (no copy). The ``partition`` says how the pieces relate:

* ``Partition.SCATTER``: the global array is cut along ``axis``; rank r holds the r-th slab
  (the default split puts the extra elements on the first ranks; ``local_shapes`` sets any split);
* ``Partition.BROADCAST``: every rank holds the whole array (rank 0's copy is the reference).

Arithmetic (``+ - *``), ``dot`` and ``norm`` run in the library and reduce over the ranks, so
every rank gets the global answer; ``asarray()`` gathers the global array on every rank. This
is the same API as PyLops-MPI: ``import pylopsmpi as pylops_mpi`` runs its scripts.

Run it with ``mpiexec -n 2 python3 01_distributed_arrays.py [figure_dir]``.
"""
import numpy as np
from mpi4py import MPI

import pylopsmpi
from gallery_utils import plt, savefig, check, rank_colors

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size

###############################################################################
# A 2-D global array of 7 x 10 values, scattered along its first axis: with 2 ranks, rank 0
# holds rows 0-3 and rank 1 rows 4-6. ``to_dist`` takes a global array that every rank holds
# (here every rank builds the same one) and keeps each rank's slab.
global_shape = (7, 10)
g = np.arange(np.prod(global_shape), dtype=np.float64).reshape(global_shape)
a0 = pylopsmpi.DistributedArray.to_dist(g, axis=0)
a1 = pylopsmpi.DistributedArray.to_dist(g, axis=1)
print(f"rank {rank}: axis 0 local shape {a0.local_shape}, axis 1 local shape {a1.local_shape}")

###############################################################################
# ``local_shapes`` sets an uneven split of our own: rank 0 keeps a single row, the last rank
# the rest. The local array is filled in place: writing to ``local_array`` writes the
# distributed array (it is the buffer the library uses).
shapes = [(1, 10)] * (size - 1) + [(7 - (size - 1), 10)] if size <= 7 else None
a2 = pylopsmpi.DistributedArray(global_shape=global_shape, local_shapes=shapes, axis=0)
row0 = sum(s[0] for s in a2.local_shapes[:rank])
a2.local_array[:] = g[row0:row0 + a2.local_shape[0]]

for name, arr in (("axis 0", a0), ("axis 1", a1), ("local_shapes", a2)):
    check(f"to_dist/asarray, {name}", arr.asarray(), g, 0.0)

###############################################################################
# Where does each value live? ``local_shapes`` (the same on every rank) gives every rank's
# slab, enough to draw the ownership maps on rank 0.
def owner_map(arr):
    own = np.empty(arr.global_shape, dtype=int)
    start = 0
    for r, s in enumerate(arr.local_shapes):
        idx = [slice(None)] * arr.ndim
        idx[arr.axis] = slice(start, start + s[arr.axis])
        own[tuple(idx)] = r
        start += s[arr.axis]
    return own


if rank == 0:
    colors = rank_colors(size)
    fig, axs = plt.subplots(1, 3, figsize=(13, 3.6))
    for ax, arr, title in zip(axs, (a0, a1, a2), ("SCATTER, axis=0", "SCATTER, axis=1",
                                                   "axis=0, local_shapes")):
        own = owner_map(arr)
        ax.imshow(colors[own], aspect="auto")
        for (i, j), v in np.ndenumerate(g):
            ax.text(j, i, f"{v:.0f}", ha="center", va="center", fontsize=7)
        ax.set_title(title)
        ax.set_xticks([])
        ax.set_yticks([])
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors[r]) for r in range(size)]
    fig.legend(handles, [f"rank {r}" for r in range(size)], loc="lower center", ncol=size)
    fig.suptitle(f"Who holds what: a 7 x 10 DistributedArray over {size} ranks", y=1.04)
    savefig(fig, "01_partition.png")

###############################################################################
# A BROADCAST array: every rank holds all of it.
b = pylopsmpi.DistributedArray.to_dist(g, partition=pylopsmpi.Partition.BROADCAST)
check("BROADCAST local array is the global array", b.local_array, g, 0.0)

###############################################################################
# Arithmetic on two 1-D signals. Element-wise operations act on local arrays; ``dot`` and
# ``norm`` reduce across the ranks, and every rank gets the same global value.
n = 101
t = np.linspace(0.0, 1.0, n)
xg = np.sin(2 * np.pi * 3 * t)
yg = np.exp(-((t - 0.4) / 0.15) ** 2)
x = pylopsmpi.DistributedArray.to_dist(xg)
y = pylopsmpi.DistributedArray.to_dist(yg)

results = {"x + y": (x + y, xg + yg), "x - y": (x - y, xg - yg), "x * y": (x * y, xg * yg),
           "2.5 x": (2.5 * x, 2.5 * xg)}
for name, (dist, ref) in results.items():
    check(name, dist.asarray(), ref, 1e-15)
check("x.dot(y)", x.dot(y), [np.dot(xg, yg)], 1e-12)
for order in (None, 1, np.inf):
    check(f"x.norm(ord={order})", x.norm(order), [np.linalg.norm(xg, order)], 1e-12)

z = x.copy()
z *= y                  # in place: x is untouched
check("copy then *= leaves x unchanged", x.asarray(), xg, 0.0)
check("in-place product", z.asarray(), xg * yg, 1e-15)

###############################################################################
# Changing the split: ``redistribute`` moves the 2-D array cut along axis 1 to a cut along
# axis 0 (an all-to-all exchange); the global array is unchanged.
a10 = a1.redistribute(0)
check("redistribute(axis=1 -> 0)", a10.asarray(), g, 0.0)
check("redistribute local slab", a10.local_array, a0.local_array, 0.0)

###############################################################################
# The signals and their combinations, each rank's segment shaded in its colour. Note that
# ``asarray()`` is collective: every rank calls it, then rank 0 draws.
curves = {name: dist.asarray() for name, (dist, _) in results.items()}
xy, xnorm = x.dot(y)[0], x.norm()[0]
owner = owner_map(x)
if rank == 0:
    colors = rank_colors(size)
    fig, axs = plt.subplots(1, 2, figsize=(12, 3.6))
    for ax, series in zip(axs, ((("x", xg), ("y", yg)), tuple(curves.items()))):
        for r in range(size):
            sel = t[owner == r]
            if sel.size:
                ax.axvspan(sel[0], sel[-1], color=colors[r], alpha=0.15, lw=0)
        for name, v in series:
            ax.plot(t, v, label=name)
        ax.legend(loc="lower left", fontsize=8)
        ax.set_xlabel("t")
    axs[0].set_title("Two DistributedArrays (shading: owning rank)")
    axs[1].set_title(f"Arithmetic; x.dot(y) = {xy:.4f}, ||x|| = {xnorm:.4f}")
    savefig(fig, "01_arithmetic.png")
