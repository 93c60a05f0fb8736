r"""
Post-stack-style inversion with a lateral derivative regularisation
===================================================================
A 2-D subsurface model of log acoustic impedance, :math:`m(x, t) = \ln \mathrm{AI}(x, t)`, is
made of ``nx`` vertical traces of ``nt`` time samples. Post-stack seismic modelling acts on each
trace alone,

.. math::
    d(x, t) = \frac{1}{2}\, w(t) * \frac{\partial m(x, t)}{\partial t},

a convolution with a wavelet :math:`w` of the time derivative of the model: one small matrix
:math:`\mathbf{G} = \frac{1}{2}\mathbf{W}\mathbf{D}_t` per trace. The traces are split over
the ranks (SCATTER along x), and :class:`pylopsmpi.MPIBlockDiag` applies each rank's copies of
:math:`\mathbf{G}` to its own traces: the modelling needs no communication.

Band-limited data leave the inversion non-unique trace by trace; a lateral smoothness term
couples the traces (and the ranks):

.. math::
    \min_\mathbf{m} \|\mathbf{d} - \mathbf{G}_{bd}\, \mathbf{m}\|_2^2 +
    \epsilon^2 \|\mathbf{D}_x \mathbf{m}\|_2^2,

with :math:`\mathbf{D}_x` = :class:`pylopsmpi.MPIFirstDerivative` along x (the distributed
axis: each rank needs one trace of each neighbour, a halo exchange). The two terms are stacked
vertically with :class:`pylopsmpi.MPIStackedVStack` (the vertical stack of distributed
operators; its data is a :class:`pylopsmpi.StackedDistributedArray`) and solved with
:func:`pylopsmpi.cgls`, starting from a smooth background model as in PyLops-MPI's post-stack
tutorial. The serial reference is the same CGLS iterations in NumPy on the assembled sparse
matrices (SciPy), since an ill-posed problem is compared iterate to iterate, not with an exact
solution.

Run it with ``mpiexec -n 2 python3 03_poststack_inversion.py [figure_dir]``.
"""
import numpy as np
import scipy.linalg as sl
import scipy.sparse as sp
from scipy.ndimage import gaussian_filter
from mpi4py import MPI

import pylopsmpi
from pylopsmpi import Partition, local_split
from gallery_utils import plt, savefig, check

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size

###############################################################################
# The model: layers bent by an anticline above a dipping base. Every rank builds the global
# model (the same formula); each then keeps its traces.
nx, nt, dt = 48, 80, 0.004
x = np.arange(nx)
tz = np.arange(nt)
top = 22 + 8 * np.exp(-((x - 20) / 10.0) ** 2)[:, None]
ai = np.full((nx, nt), 2000.0)
ai[tz[None, :] > top] = 2600.0
ai[tz[None, :] > top + 18] = 2300.0
ai[tz[None, :] > 62 - (x[:, None] * 0.15)] = 3200.0
m_true = np.log(ai)
m_back = gaussian_filter(m_true, sigma=(6, 8))     # smooth background (starting model)

###############################################################################
# One trace's modelling matrix: a 25 Hz Ricker wavelet, as a 'same'-size convolution matrix,
# times a centred time derivative.
tw = np.arange(-15, 16) * dt
f0 = 25.0
wav = (1 - 2 * (np.pi * f0 * tw) ** 2) * np.exp(-(np.pi * f0 * tw) ** 2)
W = sl.toeplitz(np.r_[wav[15:], np.zeros(nt - 16)], np.r_[wav[15::-1], np.zeros(nt - 16)])
Dt = (np.eye(nt, k=1) - np.eye(nt, k=-1)) / 2.0
Dt[0, :2], Dt[-1, -2:] = [-1, 1], [-1, 1]
G = 0.5 * W @ Dt

###############################################################################
# The distributed operators. This rank's traces (the default SCATTER split of nx) each get one
# copy of G in the block diagonal, so model and data are (nx, nt) arrays cut along x and
# flattened.
nx_local = local_split((nx,), comm, Partition.SCATTER, 0)[0]
Gop = pylopsmpi.MPIBlockDiag([G] * nx_local)
Dx = pylopsmpi.MPIFirstDerivative((nx, nt), kind="centered", edge=False)
eps = 0.5
StackOp = pylopsmpi.MPIStackedVStack([Gop, eps * Dx])

# Model-sized arrays are split by whole traces, as the operators expect (local_shapes).
shapes = comm.allgather((nx_local * nt,))
m_dist = pylopsmpi.DistributedArray.to_dist(m_true.ravel(), local_shapes=shapes)
m0_dist = pylopsmpi.DistributedArray.to_dist(m_back.ravel(), local_shapes=shapes)
d_clean = Gop @ m_dist
noise = 0.01 * np.random.default_rng(3).standard_normal(nx * nt)
d_dist = pylopsmpi.DistributedArray.to_dist(d_clean.asarray() + noise, local_shapes=shapes)

###############################################################################
# Unregularised CGLS (trace by trace in effect) and the regularised one, whose data is the
# stack [d, 0].
niter = 30
m_cgls, _, _, _, _, cost_cgls = pylopsmpi.cgls(Gop, d_dist, m0_dist, niter=niter, tol=0.0)
zero = pylopsmpi.DistributedArray(global_shape=nx * nt, local_shapes=shapes)
zero[:] = 0.0
d_stack = pylopsmpi.StackedDistributedArray([d_dist, zero])
m_reg, _, _, _, _, cost_reg = pylopsmpi.cgls(StackOp, d_stack, m0_dist, niter=niter, tol=0.0,
                                             show=True, itershow=(3, 3, 10))
m_cgls, m_reg = m_cgls.asarray().reshape(nx, nt), m_reg.asarray().reshape(nx, nt)

###############################################################################
# The serial reference: the assembled matrices (SciPy sparse) and the textbook CGLS.
Gs = sp.kron(sp.eye(nx), sp.csr_matrix(G), format="csr")
D1 = (sp.eye(nx, k=1) - sp.eye(nx, k=-1)).tolil() / 2.0
D1[0, :], D1[-1, :] = 0.0, 0.0          # edge=False: the first and last rows are zero
Dxs = sp.kron(D1, sp.eye(nt), format="csr")


def cgls_serial(A, y, x0, niter):
    """Textbook CGLS (no damping), the algorithm of pylopsmpi.cgls and PyLops-MPI's."""
    x = x0.copy()
    s = y - A @ x
    r = A.T @ s
    c, q = r.copy(), A @ r
    k = r @ r
    cost = [np.linalg.norm(s)]
    for _ in range(niter):
        a = k / (q @ q)
        x += a * c
        s -= a * q
        r = A.T @ s
        knew = r @ r
        c = r + (knew / k) * c
        q = A @ c
        k = knew
        cost.append(np.linalg.norm(s))
    return x, np.array(cost)


check("forward vs serial matrix", d_clean.asarray(), Gs @ m_true.ravel(), 1e-12)
dd = d_dist.asarray()
ref_cgls, ref_cost = cgls_serial(Gs, dd, m_back.ravel(), niter)
# Without regularisation CGLS soon fits the noise through the operator's tiny singular values,
# where iterates amplify rounding differences (summation order differs with the rank count):
# past ~25 iterations they drift from the serial ones by more than 1e-10.
check("CGLS vs serial CGLS", m_cgls.ravel(), ref_cgls, 1e-6)
check("CGLS cost vs serial", cost_cgls, ref_cost, 1e-6)
Astack = sp.vstack([Gs, eps * Dxs], format="csr")
ref_reg, ref_cost_reg = cgls_serial(Astack, np.r_[dd, np.zeros(nx * nt)], m_back.ravel(), niter)
check("regularised CGLS vs serial CGLS", m_reg.ravel(), ref_reg, 1e-10)
check("regularised CGLS cost vs serial", cost_reg, ref_cost_reg, 1e-10)
err_cgls = np.linalg.norm(m_cgls - m_true) / np.linalg.norm(m_true - m_back)
err_reg = np.linalg.norm(m_reg - m_true) / np.linalg.norm(m_true - m_back)
if rank == 0:
    print(f"model error relative to the background's: CGLS {err_cgls:.3f}, regularised {err_reg:.3f}")

###############################################################################
# Figures: model, background, data; the two estimates; convergence curves.
d_img = dd.reshape(nx, nt)
split_points = np.cumsum([0] + comm.allgather(nx_local))     # the ranks' trace ranges
if rank == 0:
    vmin, vmax = m_true.min(), m_true.max()
    ext = (0, nx, nt * dt, 0)
    fig, axs = plt.subplots(1, 3, figsize=(15, 4.5))
    for ax, img, title, kw in ((axs[0], m_true, "True model ln(AI)", dict(vmin=vmin, vmax=vmax)),
                               (axs[1], m_back, "Background (starting model)", dict(vmin=vmin, vmax=vmax)),
                               (axs[2], d_img, "Noisy data", dict(cmap="gray"))):
        im = ax.imshow(img.T, aspect="auto", extent=ext, **kw)
        ax.set_title(title)
        ax.set_xlabel("trace x")
        plt.colorbar(im, ax=ax)
    axs[0].set_ylabel("time (s)")
    for ax in axs:
        for b in split_points[1:-1]:
            ax.axvline(b, color="w", ls="--", lw=1)
    savefig(fig, "03_model_data.png")

    fig, axs = plt.subplots(1, 3, figsize=(15, 4.5))
    for ax, img, title in ((axs[0], m_cgls, f"CGLS ({niter} it.), error {err_cgls:.2f}"),
                           (axs[1], m_reg, f"CGLS + eps Dx ({niter} it.), error {err_reg:.2f}")):
        im = ax.imshow(img.T, aspect="auto", extent=ext, vmin=vmin, vmax=vmax)
        ax.set_title(title)
        ax.set_xlabel("trace x")
        plt.colorbar(im, ax=ax)
    it = nx // 2
    axs[2].plot(m_true[it], tz * dt, "k", lw=3, label="true")
    axs[2].plot(m_back[it], tz * dt, "gray", label="background")
    axs[2].plot(m_cgls[it], tz * dt, "b", label="CGLS")
    axs[2].plot(m_reg[it], tz * dt, "r", label="regularised")
    axs[2].invert_yaxis()
    axs[2].set_title(f"Trace {it}")
    axs[2].legend(fontsize=8)
    savefig(fig, "03_estimates.png")

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.semilogy(cost_cgls, "b", label="CGLS: ||d - G m||")
    ax.semilogy(cost_reg, "r", label="regularised: ||[d; 0] - [G; eps Dx] m||")
    ax.semilogy(ref_cost_reg, "k:", label="serial NumPy reference")
    ax.set_xlabel("iteration")
    ax.set_title("Convergence")
    ax.legend(fontsize=8)
    savefig(fig, "03_convergence.png")
