"""The Python blocks of docs/getting-started-python.md that are not whole programs, as one program:
each is a fragment of this file (tests/docs/run-doc-blocks checks that its lines are here, then
runs this file at 2 ranks against the installed package). Every part checks what it computed
against NumPy; the program raises (exit 1) on every rank if a check fails."""
import numpy as np
from mpi4py import MPI
from scipy.sparse.linalg import aslinearoperator
import pylopsmpi as pylops_mpi

rank, size = MPI.COMM_WORLD.rank, MPI.COMM_WORLD.size


def agree(ok, what):
    """Every rank raises when the check failed on any rank."""
    if not MPI.COMM_WORLD.allreduce(bool(ok), op=MPI.LAND):
        raise SystemExit("python_tour: %s: check failed" % what)


# --- Operators defined in Python -----------------------------------------------------------------
class Scaling(pylops_mpi.MPIShellOperator):
    def __init__(self, d):                     # d: a DistributedArray
        super().__init__(domain=d, range=d, dtype=d.dtype)
        self.d = d
    def _matvec(self, x):                      # x: a DistributedArray, lent, read-only
        return x * self.d
    def _rmatvec(self, y):
        return y * self.d.conj()


d = pylops_mpi.DistributedArray(10)
d[:] = 1.0 + np.arange(d.local_shape[0])
v = pylops_mpi.DistributedArray(10)
v[:] = 1.0
S = Scaling(d)
agree(np.allclose((S @ v).asarray(), d.asarray()), "Scaling")
# composed in the library and solved there: (2 S) x = 2 d gives x = 1
xs = pylops_mpi.cgls(2 * S, 2 * d, x0=v * 0, niter=20, tol=0)[0]
agree(np.allclose(xs.asarray(), 1.0), "cgls on 2 S")

# --- Proximal operators and solvers (the first script's BDiag, y and x0) ---------------------
A = np.random.default_rng(rank).normal(size=(20, 15))
BDiag = pylops_mpi.MPIBlockDiag(ops=[aslinearoperator(A)])
x = pylops_mpi.DistributedArray(size * 15)
x[:] = np.ones(15)
y = BDiag @ x
x0 = pylops_mpi.DistributedArray(BDiag.shape[1])
x0[:] = 0

from pylopsmpi.proximal import MPIProxOperator, MPIL2, L1       # pylops_mpi.proximal
from pylopsmpi.proximal.optimization.primal import ProximalGradient, ADMML2
# (also pylopsmpi.proximal.ProximalGradient / ADMML2; PyLops-MPI users who took them from
#  pyproximal.optimization.primal change that import to one of these)
l2 = MPIL2(Op=BDiag, b=y, x0=x0)
xinv = ProximalGradient(l2, MPIProxOperator(L1(sigma=0.1)), x0=x0, tau=1e-3, niter=400,
                        acceleration="fista")
Reg = pylops_mpi.MPIBlockDiag(ops=[np.eye(15)])                 # the z = Reg x constraint
xadmm, z = ADMML2(L1(sigma=0.1), BDiag, y, A=Reg, x0=x0, tau=1.0, niter=50)

# both land near x = 1 (shrunk a little by the L1 term)
agree(np.linalg.norm(xinv.asarray() - 1) < 0.05 * np.sqrt(size * 15), "ProximalGradient")
agree(np.linalg.norm(xadmm.asarray() - 1) < 0.05 * np.sqrt(size * 15), "ADMML2")

# --- Total variation with PrimalDual and MPIL21 (pyproximal's signature) -------------------------
from pylopsmpi.proximal import MPIL21
from pylopsmpi.proximal.optimization.primaldual import PrimalDual
ny, nx = 4 * size + 4, 6
clean = np.repeat([1.0, 3.0], ny * nx // 2)                      # two flat halves
noise = 0.2 * np.sin(1.7 * np.arange(ny * nx))
Grad = pylops_mpi.MPIGradient(dims=(ny, nx), kind="forward")     # its range: 2 stacked members
rows = [ny // size + (r < ny % size) for r in range(size)]       # its model split: whole rows
noisy = pylops_mpi.DistributedArray(ny * nx, local_shapes=[(r * nx,) for r in rows])
noisy[:] = (clean + noise)[sum(rows[:rank]) * nx:sum(rows[:rank + 1]) * nx]
xtv = PrimalDual(MPIL2(b=noisy), MPIL21(ndim=2, sigma=0.1), Grad, x0=noisy * 0,
                 tau=0.35, mu=0.35, theta=1.0, niter=100)
agree(np.linalg.norm(xtv.asarray() - clean) < 0.5 * np.linalg.norm(noise), "PrimalDual TV")

# --- pyproximal's compositions and backtracking ---------------------------------------------------
f = MPIProxOperator(L1(sigma=0.1))
g = 2.0 * f                          # postcomposition: prox_{2 tau f}
h = f.precomposition(-1.0, 0.25)     # f(-x + 0.25)
k = f + x0                           # affine addition: f(x) + x0^T x
ones = x0.copy()
ones[:] = 1.0
agree(np.isclose(g(ones), 2 * 0.1 * size * 15) and np.isclose(h(ones), 0.1 * 0.75 * size * 15), "compositions")
xbt = ProximalGradient(l2, f, x0=x0, tau=None, niter=100, acceleration="fista")  # backtracking
agree(np.linalg.norm(xbt.asarray() - 1) < 0.05 * np.sqrt(size * 15), "backtracking")

# --- Lifetimes ----------------------------------------------------------------------------------
with pylops_mpi.DistributedArray(100) as x:
    ...
    x[:] = 2.0
    agree(np.isclose(x.norm(), 20.0), "with block")

if rank == 0:
    print("python_tour: passed on %d rank(s)" % size)
