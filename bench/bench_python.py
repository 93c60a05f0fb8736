"""Python binding overhead (scripts: mpiexec -n 2 /usr/bin/python3 bench/bench_python.py).

With PYTHONPATH=build/python. For a block-diagonal of dense blocks (1000 and 100 rows per rank,
float64), times in the same run:
  - CGLS (20 iterations, tol 0): pylopsmpi.cgls against the library's plm_solve_cgls called
    directly through the low-level layer (the C solver on the same handles: the C reference,
    only a cffi call apart);
  - one apply: Op @ x (the package: new output array, layout checks) against plm_op_apply on
    preallocated arrays;
  - the Python-callback path: the same block as a SciPy LinearOperator calling back into Python,
    under the library's CGLS, against the dense C block.
Prints a table (best of REPEAT runs, max over ranks); asserts nothing.
"""
import sys
import time

import numpy as np
from mpi4py import MPI
from scipy.sparse.linalg import LinearOperator

import pylopsmpi as pm
from pylopsmpi import ffi, lib

comm = MPI.COMM_WORLD
REPEAT = int(sys.argv[1]) if len(sys.argv) > 1 else 5
NITER = 20


def best(fn, repeat=REPEAT, inner=1):
    ts = []
    for _ in range(repeat):
        comm.Barrier()
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        ts.append((time.perf_counter() - t0) / inner)
    return comm.allreduce(min(ts), op=MPI.MAX)


def row(name, t_py, t_c):
    if comm.rank == 0:
        print(f"{name:44s} {t_py * 1e3:10.3f} {t_c * 1e3:10.3f} {t_py / t_c:7.2f}x")


def bench(n):
    rng = np.random.default_rng(comm.rank)
    A = rng.standard_normal((n, n)) + n * np.eye(n)
    Op = pm.MPIBlockDiag([A])
    y = pm.DistributedArray.to_dist(np.ones(n * comm.size))
    x0 = y.zeros_like()
    xc = x0.copy()
    info = ffi.NULL

    def c_cgls():
        xc.local_array[:] = 0
        pm.check(lib.plm_solve_cgls(Op.handle, y.handle, xc.handle, NITER, 0.0, 0.0, info))
    row(f"CGLS {NITER} it, {n}-row blocks", best(lambda: pm.cgls(Op, y, x0, niter=NITER, tol=0.0)),
        best(c_cgls))
    out = y.copy()
    inner = max(1, 20000 // n)
    row(f"one apply, {n}-row blocks", best(lambda: Op @ y, inner=inner),
        best(lambda: pm.check(lib.plm_op_apply(Op.handle, y.handle, out.handle)), inner=inner))
    cb = pm.MPIBlockDiag([LinearOperator(A.shape, matvec=lambda v: A @ v, rmatvec=lambda v: A.T @ v,
                                         dtype=np.float64)])

    def c_cgls_cb():
        xc.local_array[:] = 0
        pm.check(lib.plm_solve_cgls(cb.handle, y.handle, xc.handle, NITER, 0.0, 0.0, info))
    row(f"CGLS, Python callback vs C block, {n} rows", best(c_cgls_cb), best(c_cgls))


if comm.rank == 0:
    print(f"pylopsmpi {pm.version()}, {comm.size} ranks; times in ms (best of {REPEAT}, max over ranks)")
    print(f"{'case':44s} {'Python':>10s} {'C':>10s} {'ratio':>8s}")
for n in (1000, 100):
    bench(n)
