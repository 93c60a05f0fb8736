r"""
Deblurring an image with a Laplacian regularisation
===================================================
A 2-D image is blurred by a horizontal camera shake: every row is convolved with a box of
``nbox`` pixels, and noise is added. The image is split by rows over the ranks (SCATTER along
axis 0), so the blur, which acts within rows, is a block-diagonal operator: one copy of the
row-blur matrix :math:`\mathbf{B}_1` per local row in :class:`pylopsmpi.MPIBlockDiag`.

A box blur wipes out some frequencies altogether, so the inverse problem needs a
regularisation. We penalise roughness with the Laplacian :math:`\mathbf{L}` =
:class:`pylopsmpi.MPILaplacian` (second derivatives along both axes: along the distributed axis
each rank needs a row of each neighbour) and solve the normal equations

.. math::
    (\mathbf{B}^H\mathbf{B} + \epsilon\, \mathbf{L}^H\mathbf{L})\, \mathbf{m} =
    \mathbf{B}^H \mathbf{d}

with :func:`pylopsmpi.cg`. The normal operator is written as PyLops-MPI writes it,
``Bop.H @ Bop + eps * Lop.H @ Lop``: the composite runs in the library. The serial reference
is SciPy's sparse direct solver on the same system; CG converges to it.

Run it with ``mpiexec -n 2 python3 04_laplacian_deblurring.py [figure_dir]``.
"""
import numpy as np
import scipy.linalg as sl
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from mpi4py import MPI

import pylopsmpi
from pylopsmpi import Partition, local_split
from gallery_utils import plt, savefig, check, require

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size

###############################################################################
# The image: a few ellipses and a ramp-filled square on a dark background (every rank builds
# the same global image).
ny, nx = 64, 72
yy, xx = np.mgrid[0:ny, 0:nx]
img = 0.2 * ((np.abs(yy - 44) < 12) & (np.abs(xx - 20) < 12)) * (1 + (xx - 8) / 24.0)
img += 1.0 * (((yy - 20) / 12.0) ** 2 + ((xx - 24) / 7.0) ** 2 < 1)
img += 0.6 * (((yy - 32) / 20.0) ** 2 + ((xx - 52) / 10.0) ** 2 < 1)
img -= 0.4 * (((yy - 28) / 5.0) ** 2 + ((xx - 52) / 4.0) ** 2 < 1)

###############################################################################
# The operators: the row blur (a 'same'-size convolution with a box of nbox pixels, one copy
# per local row) and the Laplacian over the whole image.
nbox = 9
box = np.ones(nbox) / nbox
col = np.r_[box[nbox // 2:], np.zeros(nx - nbox // 2 - 1)]
B1 = sl.toeplitz(col, col)
ny_local = local_split((ny,), comm, Partition.SCATTER, 0)[0]
Bop = pylopsmpi.MPIBlockDiag([B1] * ny_local)
Lop = pylopsmpi.MPILaplacian((ny, nx), axes=(0, 1), weights=(1, 1), sampling=(1, 1))

shapes = comm.allgather((ny_local * nx,))      # arrays split by whole rows, like the operators
m_dist = pylopsmpi.DistributedArray.to_dist(img.ravel(), local_shapes=shapes)
d_clean = Bop @ m_dist
noise = 0.01 * np.random.default_rng(4).standard_normal(ny * nx)
d_dist = pylopsmpi.DistributedArray.to_dist(d_clean.asarray() + noise, local_shapes=shapes)

###############################################################################
# The regularised normal equations, solved with CG from a zero image.
eps = 0.01
NormOp = Bop.H @ Bop + eps * Lop.H @ Lop
rhs = Bop.H @ d_dist
x0 = pylopsmpi.DistributedArray(global_shape=ny * nx, local_shapes=shapes)
x0[:] = 0.0
m_est_dist, iit, cost = pylopsmpi.cg(NormOp, rhs, x0, niter=400, tol=1e-20)
m_est = m_est_dist.asarray().reshape(ny, nx)
if rank == 0:
    print(f"cg: {iit} iterations, residual {cost[0]:.3e} -> {cost[-1]:.3e}")

###############################################################################
# The serial reference: the same matrices assembled with SciPy and a sparse direct solve.
Bs = sp.kron(sp.eye(ny), sp.csr_matrix(B1), format="csr")


def second_derivative(n):
    D2 = sp.diags([np.ones(n - 1), -2 * np.ones(n), np.ones(n - 1)], [-1, 0, 1]).tolil()
    D2[0, :], D2[-1, :] = 0.0, 0.0      # edge=False: no derivative on the first and last rows
    return D2.tocsr()


Ls = sp.kron(second_derivative(ny), sp.eye(nx)) + sp.kron(sp.eye(ny), second_derivative(nx))
check("blur vs serial matrix", d_clean.asarray(), Bs @ img.ravel(), 1e-13)
check("Laplacian vs serial matrix", (Lop @ m_dist).asarray(), Ls @ img.ravel(), 1e-13)
dd = d_dist.asarray()
m_ref = spla.spsolve((Bs.T @ Bs + eps * Ls.T @ Ls).tocsc(), Bs.T @ dd).reshape(ny, nx)
check("cg estimate vs sparse direct solve", m_est, m_ref, 1e-8)
err = np.linalg.norm(m_est - img) / np.linalg.norm(img)
err_blur = np.linalg.norm(dd.reshape(ny, nx) - img) / np.linalg.norm(img)
require(f"deblurred error {err:.3f} < blurred data error {err_blur:.3f}", err < 0.8 * err_blur)

###############################################################################
# Figures: image, blurred data, deblurred estimate, a row through the ellipses, and CG's
# convergence.
row_split = np.cumsum([0] + comm.allgather(ny_local))
if rank == 0:
    fig, axs = plt.subplots(1, 3, figsize=(15, 4.4))
    for ax, im, title in ((axs[0], img, "True image"),
                          (axs[1], dd.reshape(ny, nx), f"Data: {nbox}-pixel motion blur + noise"),
                          (axs[2], m_est, f"Deblurred (CG, {iit} it.), error {err:.2f}")):
        ax.imshow(im, cmap="gray", vmin=-0.2, vmax=1.2)
        ax.set_title(title)
        for b in row_split[1:-1]:
            ax.axhline(b - 0.5, color="r", ls="--", lw=1)
    axs[0].set_ylabel("rows (dashed: rank boundary)")
    savefig(fig, "04_deblurring.png")

    fig, axs = plt.subplots(1, 2, figsize=(13, 4))
    r = 20
    axs[0].plot(img[r], "k", lw=3, label="true")
    axs[0].plot(dd.reshape(ny, nx)[r], "gray", label="blurred data")
    axs[0].plot(m_ref[r], "c", lw=2, label="serial direct solve")
    axs[0].plot(m_est[r], "--r", label=f"pylopsmpi cg, {size} ranks")
    axs[0].set_title(f"Row {r}")
    axs[0].legend(fontsize=8)
    axs[1].semilogy(cost, "b")
    axs[1].set_xlabel("iteration")
    axs[1].set_title("CG residual ||rhs - N m||")
    savefig(fig, "04_convergence.png")
