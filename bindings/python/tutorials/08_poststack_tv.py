r"""
Post-stack inversion with total-variation regularisation
========================================================
The post-stack problem of tutorial 03 (a 2-D model of log acoustic impedance,
:math:`m(x, t) = \ln \mathrm{AI}(x, t)`, ``nx`` traces of ``nt`` samples, one small modelling
matrix :math:`\mathbf{G} = \frac{1}{2}\mathbf{W}\mathbf{D}_t` per trace, the traces split over
the ranks and applied by :class:`pylopsmpi.MPIBlockDiag`), now with noisier data and a blocky
model: flat-topped layers separated by sharp interfaces. A smoothing (:math:`\ell_2`)
regulariser smears the interfaces; the anisotropic total variation (TV),

.. math::
    \min_\mathbf{m} \frac{1}{2}\|\mathbf{d} - \mathbf{G}_{bd}\, \mathbf{m}\|_2^2 +
    \sigma \|\boldsymbol\nabla \mathbf{m}\|_1,

favours piecewise-constant models and keeps them sharp, as in PyLops-MPI's post-stack tutorial.
:math:`\boldsymbol\nabla` is :class:`pylopsmpi.MPIGradient` (forward differences along x, the
distributed axis, and along t): it maps the model to a
:class:`pylopsmpi.StackedDistributedArray` of two derivatives. The problem is solved with
:func:`pylopsmpi.proximal.ADMML2` (:math:`\mathbf{A} = \boldsymbol\nabla`, :math:`g` the
:math:`\ell_1` norm): each iteration runs a few CGLS iterations on
:math:`[\mathbf{G}_{bd};\ \boldsymbol\nabla / \sqrt{\tau}]`, a soft thresholding of
:math:`\boldsymbol\nabla\mathbf{m} + \mathbf{u}` at :math:`\sigma\tau`, and the update of the
scaled dual :math:`\mathbf{u}`; the whole loop runs in the library.

The :math:`\ell_2` comparison is CGLS on :math:`[\mathbf{G}_{bd};\ \sqrt{\epsilon}\,\mathbf{L}]`
with :class:`pylopsmpi.MPILaplacian` :math:`\mathbf{L}` (PyLops-MPI's regularised inversion),
its :math:`\epsilon` the best of a few tried. Both are checked against the same iterations in
NumPy on the assembled SciPy sparse matrices, in float64; the inner CGLS runs a fixed number of
iterations (``tol=0``) so that the serial reference takes the same steps.

Run it with ``mpiexec -n 2 python3 08_poststack_tv.py [figure_dir]``.
"""
import numpy as np
import scipy.linalg as sl
import scipy.sparse as sp
from scipy.ndimage import gaussian_filter
from mpi4py import MPI

import pylopsmpi
from pylopsmpi import Partition, local_split
from pylopsmpi.proximal import ADMML2, L1, MPIProxOperator
from gallery_utils import plt, savefig, check, require

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size

###############################################################################
# The blocky model (every rank builds it with the same formula) and the smooth background
# that every inversion starts from.
nx, nt, dt = 48, 80, 0.004
x = np.arange(nx)
tz = np.arange(nt)
top = 20 + np.where(np.abs(x - 24) < 10, 8, 0)[:, None]          # a fault-bounded block
ai = np.full((nx, nt), 2000.0)
ai[tz[None, :] > top] = 2600.0
ai[tz[None, :] > top + 16] = 2200.0
ai[tz[None, :] > 60 - (x[:, None] // 8)] = 3000.0                  # a staircase base
m_true = np.log(ai)
m_back = gaussian_filter(m_true, sigma=(8, 10))

###############################################################################
# One trace's modelling matrix, as in tutorial 03: a 25 Hz Ricker wavelet times a centred
# time derivative.
tw = np.arange(-15, 16) * dt
f0 = 25.0
wav = (1 - 2 * (np.pi * f0 * tw) ** 2) * np.exp(-(np.pi * f0 * tw) ** 2)
W = sl.toeplitz(np.r_[wav[15:], np.zeros(nt - 16)], np.r_[wav[15::-1], np.zeros(nt - 16)])
Dt = (np.eye(nt, k=1) - np.eye(nt, k=-1)) / 2.0
Dt[0, :2], Dt[-1, -2:] = [-1, 1], [-1, 1]
G = 0.5 * W @ Dt

###############################################################################
# The distributed operators: this rank's traces in the block diagonal, the gradient and the
# Laplacian on the (nx, nt) model cut along x.
nx_local = local_split((nx,), comm, Partition.SCATTER, 0)[0]
Gop = pylopsmpi.MPIBlockDiag([G] * nx_local)
Grad = pylopsmpi.MPIGradient((nx, nt), sampling=1.0, edge=False, kind="forward")
Lap = pylopsmpi.MPILaplacian((nx, nt), axes=(0, 1), weights=(1, 1), sampling=(1, 1))

shapes = comm.allgather((nx_local * nt,))
m_dist = pylopsmpi.DistributedArray.to_dist(m_true.ravel(), local_shapes=shapes)
m0_dist = pylopsmpi.DistributedArray.to_dist(m_back.ravel(), local_shapes=shapes)
d_clean = Gop @ m_dist
noise = 0.03 * np.random.default_rng(8).standard_normal(nx * nt)
d_dist = pylopsmpi.DistributedArray.to_dist(d_clean.asarray() + noise, local_shapes=shapes)
dd = d_dist.asarray()

###############################################################################
# The serial matrices (SciPy sparse): the block diagonal, forward differences (last row zero)
# along x and t stacked as MPIGradient's two members, and second differences (first and last
# rows zero: edge=False) summed along both axes for the Laplacian.
Gs = sp.kron(sp.eye(nx), sp.csr_matrix(G), format="csr")


def forward_diff(n):
    D = (sp.eye(n, k=1) - sp.eye(n)).tolil()
    D[-1, :] = 0.0
    return D.tocsr()


def second_diff(n):
    D = (sp.eye(n, k=1) - 2 * sp.eye(n) + sp.eye(n, k=-1)).tolil()
    D[0, :], D[-1, :] = 0.0, 0.0
    return D.tocsr()


Gxs = sp.kron(forward_diff(nx), sp.eye(nt), format="csr")
Gts = sp.kron(sp.eye(nx), forward_diff(nt), format="csr")
Grads = sp.vstack([Gxs, Gts], format="csr")
Laps = (sp.kron(second_diff(nx), sp.eye(nt)) + sp.kron(sp.eye(nx), second_diff(nt))).tocsr()

check("forward vs serial matrix", dd - noise, Gs @ m_true.ravel(), 1e-12)
g_dist = Grad @ m_dist
check("MPIGradient vs serial differences",
      np.concatenate([a.asarray() for a in g_dist.distarrays]), Grads @ m_true.ravel(), 1e-12)
check("MPILaplacian vs serial differences", (Lap @ m_dist).asarray(), Laps @ m_true.ravel(), 1e-12)


def cgls_serial(A, y, x0, niter):
    """Textbook CGLS (no damping, no early stop), the algorithm of pylopsmpi.cgls."""
    x = x0.copy()
    s = y - A @ x
    r = A.T @ s
    c, q = r.copy(), A @ r
    k = r @ r
    for _ in range(niter):
        a = k / (q @ q)
        x += a * c
        s -= a * q
        r = A.T @ s
        knew = r @ r
        c = r + (knew / k) * c
        q = A @ c
        k = knew
    return x


###############################################################################
# The L2 solution: CGLS on the stack [G; sqrt(eps) L] for a few eps, each checked against the
# serial CGLS; the best one (smallest error against the true model) is the comparison.
niter_l2 = 60
zero = pylopsmpi.DistributedArray(global_shape=nx * nt, local_shapes=shapes)
zero[:] = 0.0
d_stack = pylopsmpi.StackedDistributedArray([d_dist, zero])
err = lambda m: np.linalg.norm(m.ravel() - m_true.ravel()) / np.linalg.norm(m_true - m_back)  # noqa: E731
best = None
for eps in (0.1, 0.3, 1.0):
    StackOp = pylopsmpi.MPIStackedVStack([Gop, np.sqrt(eps) * Lap])
    m_l2 = pylopsmpi.cgls(StackOp, d_stack, m0_dist, niter=niter_l2, tol=0.0)[0].asarray()
    ref = cgls_serial(sp.vstack([Gs, np.sqrt(eps) * Laps]), np.r_[dd, np.zeros(nx * nt)],
                      m_back.ravel(), niter_l2)
    check(f"L2 (Laplacian, eps {eps}) CGLS vs serial CGLS", m_l2, ref, 1e-8)
    if best is None or err(m_l2) < best[0]:
        best = (err(m_l2), eps, m_l2.reshape(nx, nt))
err_l2, eps_l2, m_l2 = best

###############################################################################
# The TV solution: ADMML2 with g = sigma ||.||_1 and A = MPIGradient, from the background.
# In ADMML2 tau weighs the coupling term ||Grad m - z + u||^2 / tau of the x-step (any tau > 0
# converges); tau = 1 converges here in far fewer iterations than PyLops-MPI's 0.99 / 8
# (1 / maxeig(Grad^H Grad)), which after 40 iterations is still no better than the L2 solution.
sigma, tau, niter, inner = 0.02, 1.0, 40, 10
l1 = MPIProxOperator(L1(sigma=sigma))
m_tv, z_tv = ADMML2(l1, Gop, d_dist, Grad, x0=m0_dist, tau=tau, niter=niter,
                    kwargs_solver=dict(niter=inner, tol=0.0))
m_tv = m_tv.asarray()
z_tv = np.concatenate([a.asarray() for a in z_tv.distarrays])


def admml2_serial(x0):
    """pyproximal's ADMML2: x from CGLS on [G; A / sqrt(tau)] (warm started), z = soft
    thresholding of A x + u at sigma tau, u += A x - z; z starts at A x0, u at 0."""
    x, z = x0.copy(), Grads @ x0
    u = np.zeros_like(z)
    Opreg = sp.vstack([Gs, Grads / np.sqrt(tau)], format="csr")
    for _ in range(niter):
        x = cgls_serial(Opreg, np.r_[dd, (z - u) / np.sqrt(tau)], x, inner)
        Ax = Grads @ x
        v = Ax + u
        z = np.sign(v) * np.maximum(np.abs(v) - sigma * tau, 0.0)
        u = u + Ax - z
    return x, z


ref_tv, ref_z = admml2_serial(m_back.ravel())
check("TV ADMML2 model vs serial ADMM", m_tv, ref_tv, 1e-8)
check("TV ADMML2 z = soft(Grad m + u) vs serial ADMM", z_tv, ref_z, 1e-8)
m_tv = m_tv.reshape(nx, nt)
err_tv = err(m_tv)
require(f"TV error {err_tv:.3f} < L2 (Laplacian, eps {eps_l2}) error {err_l2:.3f}", err_tv < err_l2)
tv_of = lambda m: np.abs(Grads @ m.ravel()).sum()  # noqa: E731
if rank == 0:
    print(f"model error relative to the background's: L2 {err_l2:.3f}, TV {err_tv:.3f}; "
          f"||Grad m||_1: true {tv_of(m_true):.2f}, L2 {tv_of(m_l2):.2f}, TV {tv_of(m_tv):.2f}")

###############################################################################
# Figures: model, background and data; the L2 and TV estimates with a trace through the
# block.
split_points = np.cumsum([0] + comm.allgather(nx_local))     # the ranks' trace ranges
if rank == 0:
    vmin, vmax = m_true.min(), m_true.max()
    ext = (0, nx, nt * dt, 0)
    fig, axs = plt.subplots(1, 3, figsize=(15, 4.5))
    for ax, img, title, kw in ((axs[0], m_true, "True model ln(AI)", dict(vmin=vmin, vmax=vmax)),
                               (axs[1], m_back, "Background (starting model)", dict(vmin=vmin, vmax=vmax)),
                               (axs[2], dd.reshape(nx, nt), "Noisy data", dict(cmap="gray"))):
        im = ax.imshow(img.T, aspect="auto", extent=ext, **kw)
        ax.set_title(title)
        ax.set_xlabel("trace x")
        plt.colorbar(im, ax=ax)
        for b in split_points[1:-1]:
            ax.axvline(b, color="w", ls="--", lw=1)
    axs[0].set_ylabel("time (s)")
    savefig(fig, "08_model_data.png")

    fig, axs = plt.subplots(1, 3, figsize=(15, 4.5))
    for ax, img, title in ((axs[0], m_l2, f"L2 (Laplacian, eps {eps_l2}), error {err_l2:.2f}"),
                           (axs[1], m_tv, f"TV (ADMML2, {niter} it.), error {err_tv:.2f}")):
        im = ax.imshow(img.T, aspect="auto", extent=ext, vmin=vmin, vmax=vmax)
        ax.set_title(title)
        ax.set_xlabel("trace x")
        plt.colorbar(im, ax=ax)
    it = nx // 2
    axs[2].plot(m_true[it], tz * dt, "k", lw=3, label="true")
    axs[2].plot(m_back[it], tz * dt, "gray", label="background")
    axs[2].plot(m_l2[it], tz * dt, "b", label="L2")
    axs[2].plot(m_tv[it], tz * dt, "r", label="TV")
    axs[2].invert_yaxis()
    axs[2].set_title(f"Trace {it}")
    axs[2].legend(fontsize=8)
    savefig(fig, "08_estimates.png")
