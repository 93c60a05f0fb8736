r"""
Distributed matrix multiplication (SUMMA)
=========================================
:class:`pylopsmpi.MPIMatrixMult` applies :math:`\mathbf{Y} = \mathbf{A}\mathbf{X}` with
:math:`\mathbf{A}` (N x K) and :math:`\mathbf{X}` (K x M) both cut in 2-D blocks over a square
:math:`p \times p` grid of ranks (``kind="summa"``): rank ``(row, col)`` holds block
``(row, col)`` of A, of X and of Y. The forward broadcasts panels of A along grid rows and of X
along grid columns and accumulates their products (SUMMA); the adjoint reduces along columns.
Nobody ever holds a whole matrix.

As in PyLops-MPI, the grid must be square: with P ranks we split off the largest square
sub-communicator (:math:`p = \lfloor\sqrt{P}\rfloor`); the other ranks sit this operator out.
With 2 ranks the grid is 1 x 1; run with 4 ranks to see a 2 x 2 grid.

We check the forward and adjoint against NumPy, run the dot test, then invert
:math:`\mathbf{Y}` for :math:`\mathbf{X}` with :func:`pylopsmpi.cgls` and compare with NumPy's
``lstsq``.

Run it with ``mpiexec -n 2 python3 05_matrix_mult.py [figure_dir]`` (or ``-n 4``).
"""
import math

import numpy as np
from mpi4py import MPI

import pylopsmpi
from gallery_utils import plt, savefig, check, rank_colors

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size

###############################################################################
# The global matrices, the same on every rank: a tall, well-conditioned A (a smooth kernel
# plus the identity) and an X of a few smooth columns.
N, K, M = 60, 40, 6
i, j = np.meshgrid(np.arange(N), np.arange(K), indexing="ij")
A = np.exp(-((i * K / N - j) / 4.0) ** 2) + np.eye(N, K)
X = np.cos(np.outer(np.linspace(0, np.pi, K), np.arange(1, M + 1) * 0.7))
Y = A @ X

###############################################################################
# The process grid: the largest square sub-communicator, rank = row * p + col.
p = math.isqrt(size)
active = rank < p * p
grid = comm.Split(color=0 if active else MPI.UNDEFINED, key=rank)
row, col = divmod(rank, p)


def block(n, q, i):
    """Block i of a dimension of n points cut in q blocks of ceil(n / q) (the last may be short)."""
    b = math.ceil(n / q)
    return slice(min(n, i * b), min(n, (i + 1) * b))


# SUMMA blocks: A (rows of N, cols of K), X (rows of K, cols of M), Y (rows of N, cols of M)
a_blk = (block(N, p, row), block(K, p, col))
x_blk = (block(K, p, row), block(M, p, col))
y_blk = (block(N, p, row), block(M, p, col))


def gather_blocks(local, blk, shape):
    """The global matrix from every grid rank's block, on every rank of comm."""
    parts = grid.allgather((blk, local)) if active else None
    parts = comm.bcast(parts, root=0)
    out = np.zeros(shape)
    for b, v in parts:
        out[b] = v.reshape(out[b].shape)
    return out


if active:
    ###########################################################################
    # The operator takes this rank's block of A and the global number of columns of X. Its
    # model and data are 1-D DistributedArrays holding each rank's X (and Y) block, row-major.
    Op = pylopsmpi.MPIMatrixMult(A[a_blk], M, base_comm=grid, kind="summa")
    x_local = X[x_blk]
    x = pylopsmpi.DistributedArray(global_shape=Op.shape[1], base_comm=grid,
                                   local_shapes=grid.allgather((x_local.size,)))
    x[:] = x_local.ravel()
    y = Op @ x
    xadj = Op.H @ y
    pylopsmpi.dottest(Op, x, y.copy())

    ###########################################################################
    # Inversion: X from Y with CGLS from zero.
    x0 = x.zeros_like()
    xinv, _, iit, _, _, cost = pylopsmpi.cgls(Op, y, x0, niter=100, tol=1e-24)
    y_loc, xadj_loc, xinv_loc = y.local_array, xadj.local_array, xinv.local_array
else:
    y_loc = xadj_loc = xinv_loc = cost = iit = None

Y_dist = gather_blocks(y_loc, y_blk, (N, M))
Xadj_dist = gather_blocks(xadj_loc, x_blk, (K, M))
Xinv = gather_blocks(xinv_loc, x_blk, (K, M))
cost, iit = comm.bcast((cost, iit), root=0)

check("forward Y = A X vs numpy", Y_dist, Y, 1e-13)
check("adjoint A^T Y vs numpy", Xadj_dist, A.T @ Y, 1e-13)
check("cgls X vs numpy lstsq", Xinv, np.linalg.lstsq(A, Y, rcond=None)[0], 1e-8)

###############################################################################
# Figures: the three matrices with the grid's blocks outlined, and the inversion.
owners = comm.allgather((active, a_blk, x_blk, y_blk))
if rank == 0:
    colors = rank_colors(size)
    fig, axs = plt.subplots(1, 3, figsize=(14, 4.6), gridspec_kw=dict(width_ratios=[K, M * 4, M * 4]))
    for k, (ax, mat, title) in enumerate(zip(axs, (A, X, Y), ("A (N x K)", "X (K x M)", "Y = A X"))):
        ax.imshow(mat, aspect="auto", cmap="viridis", interpolation="nearest")
        for r, (act, *blks) in enumerate(owners):
            if not act:
                continue
            rs, cs = blks[k]
            ax.add_patch(plt.Rectangle((cs.start - 0.5, rs.start - 0.5), cs.stop - cs.start,
                                       rs.stop - rs.start, fill=False, lw=3, ec=colors[r]))
            ax.text((cs.start + cs.stop) / 2 - 0.5, (rs.start + rs.stop) / 2 - 0.5, f"rank {r}",
                    color="w", ha="center", va="center", fontsize=9, fontweight="bold")
        ax.set_title(title)
    fig.suptitle(f"SUMMA on a {p} x {p} grid ({size} ranks; boxes: each rank's block)")
    savefig(fig, "05_blocks.png")

    fig, axs = plt.subplots(1, 2, figsize=(12, 4))
    for c in range(M):
        axs[0].plot(X[:, c], color=f"C{c}", lw=3, alpha=0.4)
        axs[0].plot(Xinv[:, c], "--", color=f"C{c}")
    axs[0].set_title("Columns of X: true (thick) and CGLS estimate (dashed)")
    axs[1].semilogy(cost, "b")
    axs[1].set_xlabel("iteration")
    axs[1].set_title(f"CGLS residual ||Y - A X|| ({iit} iterations)")
    savefig(fig, "05_inversion.png")
