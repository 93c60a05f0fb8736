"""The installed Python package, outside the project (scripts/install-test runs it under mpiexec
with the python of a `python3 -m venv --system-site-packages` environment the wheel was installed
into):

    mpiexec -n 2 venv/bin/python installed_cgls.py <prefix>/lib

The damped least-squares problem of the other install consumers (block-diagonal of diagonals,
n = 1000, CGLS with damp) in PyLops-MPI's API, checked against the serial float64 solution. It
also checks that the package was imported from the environment, not from the source or build
tree, and that the C library loaded is the installed one. Prints VERIFIED on rank 0.
"""
import os
import sys

import numpy as np
from mpi4py import MPI

import pylopsmpi as pylops_mpi

comm = MPI.COMM_WORLD
libdir = os.path.realpath(sys.argv[1])
pkg = os.path.realpath(pylops_mpi.__file__)
assert pkg.startswith(os.path.realpath(sys.prefix)), f"pylopsmpi imported from {pkg}, not {sys.prefix}"
with open("/proc/self/maps") as f:
    loaded = {line.split()[-1] for line in f if "libpylopsmpi.so" in line}
assert loaded and all(os.path.realpath(p).startswith(libdir) for p in loaded), loaded

n, damp = 1000, 0.5
d = 1.0 + np.arange(n) / n                              # the global diagonal
x = pylops_mpi.DistributedArray(global_shape=n)
lo = sum(s[0] for s in x.local_shapes[:comm.rank])
dl = d[lo:lo + x.local_shape[0]]
Op = pylops_mpi.MPIBlockDiag([np.diag(dl)])
y = pylops_mpi.DistributedArray.to_dist(np.ones(n))
x0 = y.zeros_like()
xinv = pylops_mpi.cgls(Op, y, x0, niter=100, damp=damp, tol=0.0)[0].asarray()
ref = d / (d * d + damp ** 2)                           # (D^T D + damp^2 I)^-1 D^T 1
err = np.max(np.abs(xinv - ref)) / np.max(np.abs(ref))
if err > 1e-8:
    raise SystemExit(f"rank {comm.rank}: relative error {err:.3e}")
if comm.rank == 0:
    print(f"VERIFIED pylopsmpi {pylops_mpi.version()} from {os.path.dirname(pkg)}, "
          f"{comm.size} ranks, relative error {err:.1e}")
