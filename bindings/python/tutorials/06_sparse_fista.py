r"""
Sparse recovery with ISTA and FISTA
===================================
Compressive sensing: a long sparse signal :math:`\mathbf{x}` (a few spikes among ``n``
samples) is observed through ``nobs`` << ``n`` random projections,
:math:`\mathbf{y} = \mathbf{A}\mathbf{x}`. The columns of :math:`\mathbf{A}` are split over the
ranks, :math:`\mathbf{A} = [\mathbf{A}_0, \mathbf{A}_1, \ldots]`, so each rank holds its
segment of the signal and its block of columns, and

.. math::
    \mathbf{y} = \sum_r \mathbf{A}_r \mathbf{x}_r

is :class:`pylopsmpi.MPIHStack`: a SCATTER model in, a BROADCAST data vector out (every rank
holds all the observations; the forward is a sum-reduction over the ranks).

Too few observations for least squares, but enough for the :math:`\ell_1`-regularised problem

.. math::
    \min_\mathbf{x} \frac{1}{2}\|\mathbf{y} - \mathbf{A}\mathbf{x}\|_2^2 +
    \epsilon \|\mathbf{x}\|_1,

solved by :func:`pylopsmpi.ista` and its accelerated version :func:`pylopsmpi.fista`. Their
step is ``alpha = 1 / maxeig(A^H A)``, estimated here with :func:`pylopsmpi.power_iteration`
on the distributed normal operator. The serial reference is the same iterations in NumPy with
the same step.

Run it with ``mpiexec -n 2 python3 06_sparse_fista.py [figure_dir]``.
"""
import numpy as np
from mpi4py import MPI

import pylopsmpi
from pylopsmpi import Partition, local_split
from gallery_utils import plt, savefig, check, require

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size

###############################################################################
# The global problem (every rank draws the same numbers from the same seed) and this rank's
# column block.
n, nobs, nspikes = 300, 90, 12
rng = np.random.default_rng(6)
A = rng.standard_normal((nobs, n)) / np.sqrt(nobs)
x_true = np.zeros(n)
x_true[rng.choice(n, nspikes, replace=False)] = rng.choice([-1, 1], nspikes) * rng.uniform(0.5, 1.5, nspikes)
y_true = A @ x_true

n_local = local_split((n,), comm, Partition.SCATTER, 0)[0]
first = sum(comm.allgather(n_local)[:rank])
A_local = A[:, first:first + n_local].copy()      # this rank's columns
Op = pylopsmpi.MPIHStack([A_local])
x_dist = pylopsmpi.DistributedArray.to_dist(x_true)
y = Op @ x_dist                         # BROADCAST: all nobs values on every rank
print(f"rank {rank}: columns {first}..{first + n_local - 1}, y partition {y.partition.value}")
check("forward vs numpy", y.asarray(), y_true, 1e-13)

###############################################################################
# The step: the largest eigenvalue of A^H A by power iterations (``Op.H @ Op`` runs in the
# library); compared with NumPy's eigenvalues.
b0 = pylopsmpi.DistributedArray(global_shape=n)
maxeig = np.real(pylopsmpi.power_iteration(Op.H @ Op, b0, niter=300, tol=1e-10)[0])
maxeig_ref = np.linalg.eigvalsh(A.T @ A).max()
check("power_iteration vs numpy eigvalsh", [maxeig], [maxeig_ref], 1e-4)
alpha = 1.0 / maxeig

###############################################################################
# ISTA and FISTA, from zero, with the same eps and step.
eps, niter = 0.02, 150
x0 = pylopsmpi.DistributedArray(global_shape=n)
x0[:] = 0.0
x_ista, _, cost_ista = pylopsmpi.ista(Op, y, x0, niter=niter, eps=eps, alpha=alpha, tol=0.0)
x_fista, _, cost_fista = pylopsmpi.fista(Op, y, x0, niter=niter, eps=eps, alpha=alpha, tol=0.0,
                                         show=True, itershow=(3, 3, 50))
x_ista, x_fista = x_ista.asarray(), x_fista.asarray()

###############################################################################
# The serial reference: the same iterations in NumPy (soft thresholding at eps * alpha / 2).
def soft(v, t):
    return np.sign(v) * np.maximum(np.abs(v) - t, 0.0)


def ista_fista_serial(fast):
    x, z, t = np.zeros(n), np.zeros(n), 1.0
    thresh = eps * alpha * 0.5
    cost = []
    for _ in range(niter):
        xold = x
        u = z if fast else x
        x = soft(u + alpha * A.T @ (y_true - A @ u), thresh)
        if fast:
            told, t = t, (1.0 + np.sqrt(1.0 + 4.0 * t * t)) / 2.0
            z = x + (x - xold) * ((told - 1.0) / t)
        cost.append(0.5 * np.linalg.norm(y_true - A @ x) ** 2 + eps * np.abs(x).sum())
    return x, np.array(cost)


ref_ista, ref_cost_ista = ista_fista_serial(False)
ref_fista, ref_cost_fista = ista_fista_serial(True)
check("ISTA vs serial ISTA", x_ista, ref_ista, 1e-9)
check("FISTA vs serial FISTA", x_fista, ref_fista, 1e-9)
check("FISTA cost vs serial", cost_fista, ref_cost_fista, 1e-9)
err_fista = np.linalg.norm(x_fista - x_true) / np.linalg.norm(x_true)
err_ista = np.linalg.norm(x_ista - x_true) / np.linalg.norm(x_true)
require(f"FISTA recovers the spikes (error {err_fista:.3f} < 0.1; ISTA {err_ista:.3f})", err_fista < 0.1)
x_l2 = np.linalg.pinv(A) @ y_true       # least squares (minimum norm) for comparison

###############################################################################
# Figures: the signal and its observations, the estimates, and the convergence of ISTA and
# FISTA.
split = np.cumsum([0] + comm.allgather(n_local))
spikes = np.flatnonzero(x_true)
if rank == 0:
    fig, axs = plt.subplots(1, 2, figsize=(14, 4), gridspec_kw=dict(width_ratios=[3, 1]))
    axs[0].stem(spikes, x_true[spikes], linefmt="k-", markerfmt="ko", basefmt="k-")
    axs[0].set_xlim(-1, n)
    for b in split[1:-1]:
        axs[0].axvline(b - 0.5, color="r", ls="--", lw=1)
    axs[0].set_title(f"Sparse model: {nspikes} spikes in {n} samples (dashed: rank boundary)")
    axs[1].plot(y_true, "b.-")
    axs[1].set_title(f"Data: {nobs} random projections")
    savefig(fig, "06_model_data.png")

    fig, axs = plt.subplots(1, 2, figsize=(14, 4), gridspec_kw=dict(width_ratios=[3, 1.4]))
    axs[0].plot(x_l2, color="gray", lw=1, label="least squares (pinv)")
    axs[0].stem(spikes, x_true[spikes], linefmt="k-", markerfmt="ko", basefmt=" ", label="true")
    for est, fmt, label in ((x_ista, "g.", f"ISTA, error {err_ista:.2f}"),
                            (x_fista, "r+", f"FISTA, error {err_fista:.2f}")):
        nz = np.flatnonzero(est)            # soft thresholding leaves exact zeros
        axs[0].plot(nz, est[nz], fmt, ms=9, label=label)
    axs[0].set_title(f"Estimates after {niter} iterations ({size} ranks)")
    axs[0].legend(fontsize=8)
    axs[1].semilogy(cost_ista, "g", label="ISTA")
    axs[1].semilogy(cost_fista, "r", label="FISTA")
    axs[1].semilogy(ref_cost_fista, "k:", label="FISTA, serial NumPy")
    axs[1].set_xlabel("iteration")
    axs[1].set_title("Cost 0.5 ||y - A x||^2 + eps ||x||_1")
    axs[1].legend()
    savefig(fig, "06_estimates.png")
