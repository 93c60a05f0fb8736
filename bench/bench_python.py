"""Python binding overhead (scripts: mpiexec -n 2 /usr/bin/python3 bench/bench_python.py).

With PYTHONPATH=build/python. For a block-diagonal of dense blocks (1000 and 100 rows per rank,
float64), times in the same run:
  - CGLS (20 iterations, tol 0): pylopsmpi.cgls against the library's plm_solve_cgls called
    directly through the low-level layer (the C solver on the same handles: the C reference,
    only a cffi call apart);
  - one apply: Op @ x (the package: new output array, layout checks) against plm_op_apply on
    preallocated arrays;
  - the Python-callback path: the same block as a SciPy LinearOperator calling back into Python,
    under the library's CGLS, against the dense C block;
  - floors of one apply's Python part, each against the C apply: a bare cffi call
    (plm_version), a new numpy local array, and a new C array on the output layout (numpy
    array, plm_array_create_from_layout, plm_array_destroy: what a new output costs at least),
    and the C apply into such a new array each time (the C side of Op @ x's semantics); then
    Op @ x against that last floor timed alternately (3 x REPEAT rounds), its ratio the target.
Prints a table in microseconds (best of REPEAT runs, max over ranks); asserts nothing. The
machine's load moves these figures: compare Python and C of the same run, over several runs.
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


def best_pair(f, g, repeat=REPEAT, inner=1):
    """best() of f and of g timed alternately (rounds of f then g), so both see the same load."""
    tf, tg = [], []
    for _ in range(repeat):
        for fn, ts in ((f, tf), (g, tg)):
            comm.Barrier()
            t0 = time.perf_counter()
            for _ in range(inner):
                fn()
            ts.append((time.perf_counter() - t0) / inner)
    return comm.allreduce(min(tf), op=MPI.MAX), comm.allreduce(min(tg), op=MPI.MAX)


def row(name, t_py, t_c):
    if comm.rank == 0:
        print(f"{name:44s} {t_py * 1e6:10.2f} {t_c * 1e6:10.2f} {t_py / t_c:7.2f}x")


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

    def c_apply():
        pm.check(lib.plm_op_apply(Op.handle, y.handle, out.handle))
    t_c = best(c_apply, inner=inner)
    row(f"one apply, {n}-row blocks", best(lambda: Op @ y, inner=inner), t_c)
    if n == 100:
        floors(Op, y, t_c, inner)
    cb = pm.MPIBlockDiag([LinearOperator(A.shape, matvec=lambda v: A @ v, rmatvec=lambda v: A.T @ v,
                                         dtype=np.float64)])

    def c_cgls_cb():
        xc.local_array[:] = 0
        pm.check(lib.plm_solve_cgls(cb.handle, y.handle, xc.handle, NITER, 0.0, 0.0, info))
    row(f"CGLS, Python callback vs C block, {n} rows", best(c_cgls_cb), best(c_cgls))


def floors(Op, y, t_c, inner):
    """What one apply's Python part cannot go below, next to the C apply."""
    lay = ffi.new("plm_layout_t *")
    pm.check(lib.plm_array_layout(y.handle, lay))
    shape, dt = y.local_array.shape, y.dtype
    code = lib.PLM_FLOAT64
    arr = ffi.new("plm_array_t *")

    def new_c_array():
        a = np.empty(shape, dt)
        pm.check(lib.plm_array_create_from_layout(lay[0], code, lib.PLM_MEMORY_HOST,
                                                  ffi.from_buffer(a), a.nbytes, arr))
        lib.plm_array_destroy(arr)

    def c_apply_new_out():
        a = np.empty(shape, dt)
        pm.check(lib.plm_array_create_from_layout(lay[0], code, lib.PLM_MEMORY_HOST,
                                                  ffi.from_buffer(a), a.nbytes, arr))
        pm.check(lib.plm_op_apply(Op.handle, y.handle, arr[0]))
        lib.plm_array_destroy(arr)
    n = inner * 10
    v = ffi.new("int[3]")
    row("floor: bare cffi call (plm_version)", best(lambda: lib.plm_version(v, v + 1, v + 2), inner=n),
        t_c)
    row("floor: numpy.empty of the local block", best(lambda: np.empty(shape, dt), inner=n), t_c)
    row("floor: numpy + C array create/destroy", best(new_c_array, inner=n), t_c)
    row("floor: C apply into a new numpy + C array", best(c_apply_new_out, inner=inner), t_c)
    t_py, t_new = best_pair(lambda: Op @ y, c_apply_new_out, repeat=3 * REPEAT, inner=inner)
    row("one apply vs the C apply into a new array", t_py, t_new)
    lib.plm_layout_destroy(lay)


if comm.rank == 0:
    print(f"pylopsmpi {pm.version()}, {comm.size} ranks; times in us (best of {REPEAT}, max over ranks)")
    print(f"{'case':44s} {'Python':>10s} {'C':>10s} {'ratio':>8s}")
for n in (1000, 100):
    bench(n)
