r"""
Block-diagonal least squares with CGLS
======================================
Each rank owns one sensor that records its own segment of a 1-D signal through its own causal
instrument response (an exponential decay, different on every rank). Stacked together the
sensors form a block-diagonal operator,

.. math::
    \begin{bmatrix} \mathbf{d}_0 \\ \mathbf{d}_1 \\ \vdots \end{bmatrix} =
    \begin{bmatrix} \mathbf{A}_0 & & \\ & \mathbf{A}_1 & \\ & & \ddots \end{bmatrix}
    \begin{bmatrix} \mathbf{m}_0 \\ \mathbf{m}_1 \\ \vdots \end{bmatrix},

which :class:`pylopsmpi.MPIBlockDiag` builds from each rank's local operator (a NumPy matrix
here; a SciPy ``LinearOperator`` works too). Model and data are SCATTER DistributedArrays. We
invert noisy data with :func:`pylopsmpi.cgls` and compare with NumPy's ``lstsq`` on the whole
(serial) matrix.

Run it with ``mpiexec -n 2 python3 02_blockdiag_cgls.py [figure_dir]``.
"""
import numpy as np
import scipy.linalg as sl
from mpi4py import MPI

import pylopsmpi
from pylopsmpi import Partition, local_split
from gallery_utils import plt, savefig, check, rank_colors

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size

###############################################################################
# The global model, a piecewise-smooth signal of 240 samples, is cut in each rank's segment
# (the default SCATTER split). Every rank builds the same global model from the same formula.
nm = 240
t = np.arange(nm)
m_true = np.sin(2 * np.pi * t / 80.0) + (np.abs(t - 150) < 20) * 1.5
m_local_n = local_split((nm,), comm, Partition.SCATTER, 0)[0]

###############################################################################
# This rank's sensor: the full convolution matrix of a causal response :math:`a^j`
# (j = 0..ntap-1) applied to its segment, so it records ntap - 1 samples more than it has
# model samples (a tall, well-conditioned block).
ntap = 12
decay = 0.55 + 0.3 * rank / max(size - 1, 1)
response = decay ** np.arange(ntap)
A = sl.toeplitz(np.r_[response, np.zeros(m_local_n - 1)], np.r_[response[0], np.zeros(m_local_n - 1)])
Op = pylopsmpi.MPIBlockDiag([A])
print(f"rank {rank}: local block {A.shape}, decay {decay:.2f}; global operator {Op.shape}")

###############################################################################
# Data: the forward operator on the true model, plus Gaussian noise (the same noise on every
# rank, drawn from one seed on the global data vector). The noisy data are split like the
# operator's output (``local_shapes``): each rank keeps its own sensor's samples.
m = pylopsmpi.DistributedArray.to_dist(m_true)
d_clean = Op @ m
noise = 0.02 * np.random.default_rng(1).standard_normal(Op.shape[0])
d = pylopsmpi.DistributedArray.to_dist(d_clean.asarray() + noise, local_shapes=d_clean.local_shapes)
pylopsmpi.dottest(Op, m, d)     # <Op m, d> == <m, Op^H d>

###############################################################################
# Invert with CGLS from a zero model; ``show=True`` prints PyLops-MPI's table on rank 0, and a
# callback records the model error after every iteration (``asarray`` is collective: the
# callback runs on every rank at the same iteration).
x0 = pylopsmpi.DistributedArray(global_shape=nm)
x0[:] = 0.0
errors = []
x, istop, niter, r1norm, r2norm, cost = pylopsmpi.cgls(
    Op, d, x0, niter=60, tol=1e-20, show=True, itershow=(5, 3, 10),
    callback=lambda xi: errors.append(np.linalg.norm(xi.asarray() - m_true) / np.linalg.norm(m_true)))
m_est = x.asarray()

###############################################################################
# The serial reference: the whole block-diagonal matrix, assembled from every rank's block, and
# NumPy's least-squares solution. CGLS converges to it.
A_all = sl.block_diag(*comm.allgather(A))
check("forward vs block_diag @ m", d_clean.asarray(), A_all @ m_true, 1e-13)
m_lstsq = np.linalg.lstsq(A_all, d.asarray(), rcond=None)[0]
check("CGLS estimate vs numpy lstsq", m_est, m_lstsq, 1e-7)
check("CGLS estimate vs true model (noise level)", m_est, m_true, 5e-2)

###############################################################################
# Figures: the operator's block structure coloured by rank, the data, the estimate and the
# convergence (data residual ``cost`` and model error per iteration).
d_all = d.asarray()
block_shapes = comm.allgather(A.shape)
if rank == 0:
    colors = rank_colors(size)
    fig, axs = plt.subplots(1, 3, figsize=(15, 4))
    owner = np.full(A_all.shape, -1)
    r0 = c0 = 0
    for r, (nr, nc) in enumerate(block_shapes):
        owner[r0:r0 + nr, c0:c0 + nc] = r
        r0, c0 = r0 + nr, c0 + nc
    img = np.ones(A_all.shape + (4,))
    for r in range(size):
        sel = (owner == r) & (np.abs(A_all) > 1e-3)
        img[sel] = colors[r]
    axs[0].imshow(img, aspect="auto", interpolation="nearest")
    axs[0].set_title(f"MPIBlockDiag {A_all.shape[0]} x {A_all.shape[1]}: one block per rank")
    axs[1].plot(t, m_true, "k", lw=2, label="true model")
    axs[1].set_title("Model")
    axs[1].legend()
    axs[2].plot(d_all, "b", lw=1, label="noisy data")
    axs[2].set_title("Data (each rank's segment in turn)")
    axs[2].legend()
    savefig(fig, "02_problem.png")

    fig, axs = plt.subplots(1, 2, figsize=(13, 4))
    axs[0].plot(t, m_true, "k", lw=3, label="true")
    axs[0].plot(t, m_lstsq, "c", lw=2, label="numpy lstsq (serial)")
    axs[0].plot(t, m_est, "--r", lw=1.5, label=f"pylopsmpi cgls, {size} ranks")
    axs[0].set_title("Estimate")
    axs[0].legend()
    axs[1].semilogy(cost, "b", label="data residual ||d - Op m||")
    axs[1].semilogy(np.arange(1, len(errors) + 1), errors, "r", label="model error (relative)")
    axs[1].set_xlabel("iteration")
    axs[1].set_title("Convergence")
    axs[1].legend()
    savefig(fig, "02_inversion.png")
