r"""
Stacked arrays and stacked operators
====================================
A :class:`pylopsmpi.StackedDistributedArray` is a list of DistributedArrays seen as one long
vector: ``+ - *``, ``dot`` and ``norm`` act on all members at once, so solvers accept it
like a DistributedArray. The members may have different sizes and splits.

Two places where stacks appear:

* an operator whose output has several parts, like :class:`pylopsmpi.MPIGradient`: the
  gradient of an image is the stack ``[d/dy, d/dx]``, each member split like the image;
* several problems solved as one: :class:`pylopsmpi.MPIStackedBlockDiag` puts distributed
  operators on a block diagonal, mapping a stack of models to a stack of data (and
  :class:`pylopsmpi.MPIStackedVStack`, in the post-stack tutorial, maps one model to a stack).

Here we take an image's gradient, do arithmetic on the stack, then invert two unrelated
problems (a 1-D signal seen through per-rank instrument responses, and an image blurred along
its rows) with one CGLS run on stacked arrays. The references are NumPy/SciPy matrices and
``lstsq`` (or a direct solve) for each problem separately (a block-diagonal least-squares problem splits).

Run it with ``mpiexec -n 2 python3 07_stacked_arrays.py [figure_dir]``.
"""
import numpy as np
import scipy.linalg as sl
import scipy.sparse as sp
from mpi4py import MPI

import pylopsmpi
from pylopsmpi import Partition, local_split
from gallery_utils import plt, savefig, check, require

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size

###############################################################################
# An image (rows split over the ranks) and its gradient: a stack of two DistributedArrays.
ny, nx = 40, 50
yy, xx = np.mgrid[0:ny, 0:nx]
img = np.exp(-(((yy - 18) / 9.0) ** 2 + ((xx - 22) / 12.0) ** 2)) + 0.5 * (np.abs(xx - yy - 10) < 3)
ny_local = local_split((ny,), comm, Partition.SCATTER, 0)[0]
shapes = comm.allgather((ny_local * nx,))      # the image split by whole rows
img_dist = pylopsmpi.DistributedArray.to_dist(img.ravel(), local_shapes=shapes)
Grad = pylopsmpi.MPIGradient((ny, nx))                  # centred, edge=False, sampling 1
g = Grad @ img_dist
print(f"rank {rank}: gradient is {g}, members' local shapes "
      f"{[d.local_shape for d in g.distarrays]}")


def first_derivative(n):
    """The centred first derivative, zero on the first and last samples (edge=False)."""
    D = (sp.eye(n, k=1) - sp.eye(n, k=-1)).tolil() / 2.0
    D[0, :], D[-1, :] = 0.0, 0.0
    return D.tocsr()


Dy = sp.kron(first_derivative(ny), sp.eye(nx), format="csr")
Dx = sp.kron(sp.eye(ny), first_derivative(nx), format="csr")
gy, gx = g[0].asarray().reshape(ny, nx), g[1].asarray().reshape(ny, nx)
check("gradient d/dy vs sparse matrix", gy.ravel(), Dy @ img.ravel(), 1e-13)
check("gradient d/dx vs sparse matrix", gx.ravel(), Dx @ img.ravel(), 1e-13)
check("gradient adjoint vs Dy^T gy + Dx^T gx", (Grad.H @ g).asarray(),
      Dy.T @ gy.ravel() + Dx.T @ gx.ravel(), 1e-13)

###############################################################################
# Arithmetic on the stack: every operation runs member by member, reductions combine them.
g_np = np.r_[gy.ravel(), gx.ravel()]
h = 2.0 * g - g * 0.5                      # a new StackedDistributedArray
check("stack arithmetic 2 g - 0.5 g", h.asarray(), 1.5 * g_np, 1e-15)
check("stack dot", g.dot(h), [g_np @ (1.5 * g_np)], 1e-13)  # a 1-element array, as PyLops-MPI
check("stack norm", [g.norm()], [np.linalg.norm(g_np)], 1e-13)
check("stack norm ord=1", [g.norm(1)], [np.abs(g_np).sum()], 1e-13)
require("stack of 2 members", g.narrays == 2)

###############################################################################
# Two problems in one solve. Problem 1: a 1-D signal, each rank's segment recorded through
# its own causal response (tall blocks). Problem 2: the image blurred along its rows (a
# 9-pixel triangle plus a little of the image itself, one copy per local row). Their stacked
# block diagonal maps the stack of models [m1, m2] to the stack of data [d1, d2].
n1 = 160
t = np.arange(n1)
m1_true = np.sign(np.sin(2 * np.pi * t / 55.0)) * (1 + t / n1)
n1_local = local_split((n1,), comm, Partition.SCATTER, 0)[0]
resp = (0.5 + 0.3 * rank / max(size - 1, 1)) ** np.arange(8)
A1 = sl.toeplitz(np.r_[resp, np.zeros(n1_local - 1)], np.r_[resp[0], np.zeros(n1_local - 1)])
Op1 = pylopsmpi.MPIBlockDiag([A1])

tri = np.r_[1.0:6.0, 4.0:0.0:-1.0] / 25.0
R = 0.3 * np.eye(nx) + sl.toeplitz(np.r_[tri[4:], np.zeros(nx - 5)])
Op2 = pylopsmpi.MPIBlockDiag([R] * ny_local)     # eigenvalues >= 0.3: a triangle's spectrum is >= 0

Op = pylopsmpi.MPIStackedBlockDiag([Op1, Op2])
m_true = pylopsmpi.StackedDistributedArray([pylopsmpi.DistributedArray.to_dist(m1_true), img_dist])
d = Op @ m_true
rng = np.random.default_rng(7)
d_noisy = pylopsmpi.StackedDistributedArray(
    [pylopsmpi.DistributedArray.to_dist(dm.asarray() + 0.01 * rng.standard_normal(dm.global_shape),
                                        local_shapes=dm.local_shapes)    # split like d
     for dm in d.distarrays])

x0 = m_true.zeros_like()                   # zeros in the models' layout
xinv, _, iit, _, _, cost = pylopsmpi.cgls(Op, d_noisy, x0, niter=150, tol=1e-24)
m1_est, m2_est = xinv[0].asarray(), xinv[1].asarray().reshape(ny, nx)

###############################################################################
# The references: each problem's whole matrix and NumPy's least squares.
A1_all = sl.block_diag(*comm.allgather(A1))
A2_all = sp.kron(sp.eye(ny), R, format="csr")
d1, d2 = d_noisy[0].asarray(), d_noisy[1].asarray()
check("stacked forward, member 1", d[0].asarray(), A1_all @ m1_true, 1e-13)
check("stacked forward, member 2", d[1].asarray(), A2_all @ img.ravel(), 1e-13)
check("CGLS model 1 vs lstsq", m1_est, np.linalg.lstsq(A1_all, d1, rcond=None)[0], 1e-8)
# A2 is square and invertible, one R per row: its least-squares solution is a solve per row
m2_ref = np.linalg.solve(R, d2.reshape(ny, nx).T).T
check("CGLS model 2 vs direct solve", m2_est, m2_ref, 1e-8)

###############################################################################
# Figures: the image and its gradient; the two problems' data and estimates; convergence.
split = np.cumsum([0] + comm.allgather(ny_local))
if rank == 0:
    fig, axs = plt.subplots(1, 4, figsize=(16, 3.8))
    for ax, im, title in ((axs[0], img, "Image (model)"), (axs[1], gy, "g[0] = d/dy"),
                          (axs[2], gx, "g[1] = d/dx"), (axs[3], np.hypot(gy, gx), "|gradient|")):
        ax.imshow(im, cmap="gray" if ax is axs[0] else "RdBu_r" if ax in axs[1:3] else "magma")
        ax.set_title(title)
        for b in split[1:-1]:
            ax.axhline(b - 0.5, color="y", ls="--", lw=1)
    fig.suptitle("MPIGradient: one image in, a StackedDistributedArray of two derivatives out")
    savefig(fig, "07_gradient.png")

    fig, axs = plt.subplots(1, 4, figsize=(17, 3.8), gridspec_kw=dict(width_ratios=[2, 1, 1, 1.3]))
    axs[0].plot(t, m1_true, "k", lw=3, label="m1 true")
    axs[0].plot(d1, "gray", lw=1, label="d1 data")
    axs[0].plot(t, m1_est, "--r", label="m1 estimate")
    axs[0].set_title("Problem 1: 1-D signal")
    axs[0].legend(fontsize=8)
    axs[1].imshow(d2.reshape(ny, nx), cmap="gray")
    axs[1].set_title("Problem 2: data d2 (row blur)")
    axs[2].imshow(m2_est, cmap="gray")
    axs[2].set_title("Problem 2: estimate m2")
    axs[3].semilogy(cost, "b")
    axs[3].set_xlabel("iteration")
    axs[3].set_title(f"CGLS on the stack ({iit} it.)")
    savefig(fig, "07_joint_inversion.png")
