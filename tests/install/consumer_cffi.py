"""A Python program outside the project, using an INSTALLED libpylopsmpi through cffi in API mode
(scripts/install-test runs it under mpiexec with Debian's python3, cffi, numpy and mpi4py):

    mpiexec -n 2 python3 consumer_cffi.py <prefix> <work dir>

The declarations come from the installed FFI header (<prefix>/include/pylopsmpi_ffi.h, read by
ffi.cdef as is); rank 0 compiles the extension against the installed pylopsmpi.h with the MPI
compiler the library was built with, then every rank imports it. It solves the problem of
consumer.c's cgls_check (blockdiag of diagonals, damped CGLS, n = 1000) on numpy buffers wrapped
without copy, passes comm.py2f() to plm_comm_create_f, reads the stop reason, checks a short
buffer gets PLM_ERR_INVALID_ARG on every rank, and prints VERIFIED on rank 0.
"""
import os
import subprocess
import sys

import cffi
import numpy as np
from mpi4py import MPI

prefix, work = sys.argv[1], sys.argv[2]
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
libdir = os.path.join(prefix, "lib")
if not os.path.isdir(libdir):  # a multiarch libdir
    libdir = os.path.dirname(subprocess.check_output(
        ["find", prefix, "-name", "libpylopsmpi.so", "-print", "-quit"], text=True).strip())

if rank == 0:
    ffi = cffi.FFI()
    with open(os.path.join(prefix, "include", "pylopsmpi_ffi.h")) as f:
        ffi.cdef(f.read())
    ffi.set_source("_plm_consumer", '#include "pylopsmpi.h"', include_dirs=[os.path.join(prefix, "include")],
                   library_dirs=[libdir], libraries=["pylopsmpi"], runtime_library_dirs=[libdir])
    os.environ.setdefault("CC", "mpicc")  # pylopsmpi.h includes <mpi.h>
    os.makedirs(work, exist_ok=True)
    ffi.compile(tmpdir=work, verbose=False)
comm.Barrier()
sys.path.insert(0, work)
from _plm_consumer import ffi, lib  # noqa: E402


def check(status, what):
    if status != lib.PLM_SUCCESS:
        raise RuntimeError(f"{what}: {ffi.string(lib.plm_status_string(status)).decode()}: "
                           f"{ffi.string(lib.plm_last_error()).decode()}")


assert lib.plm_check_version(0, 3) == lib.PLM_SUCCESS
n, damp = 1000, 0.5
pc = ffi.new("plm_comm_t *")
check(lib.plm_comm_create_f(comm.py2f(), ffi.NULL, pc), "plm_comm_create_f")
nl = n // size + (1 if rank < n % size else 0)
o = rank * (n // size) + min(rank, n % size)
idx = np.arange(o, o + nl)
d = 1.0 + 0.5 * (idx % 7)
pdiag, pa = ffi.new("plm_op_t *"), ffi.new("plm_op_t *")
check(lib.plm_op_diagonal(lib.PLM_FLOAT64, nl, ffi.from_buffer(d), d.nbytes, pdiag), "plm_op_diagonal")
check(lib.plm_op_blockdiag(pc[0], 1, pdiag, 0, ffi.NULL, pa), "plm_op_blockdiag")
pdom, pran = ffi.new("plm_layout_t *"), ffi.new("plm_layout_t *")
check(lib.plm_op_domain(pa[0], pdom), "plm_op_domain")
check(lib.plm_op_range(pa[0], pran), "plm_op_range")

x, y = np.zeros(nl), 1.0 + 0.25 * (idx % 11)  # wrapped: the solve writes into x
px, py = ffi.new("plm_array_t *"), ffi.new("plm_array_t *")
check(lib.plm_array_create_from_layout(pdom[0], lib.PLM_FLOAT64, lib.PLM_MEMORY_HOST, ffi.from_buffer(x), x.nbytes, px),
      "array x")
check(lib.plm_array_create_from_layout(pran[0], lib.PLM_FLOAT64, lib.PLM_MEMORY_HOST, ffi.from_buffer(y), y.nbytes, py),
      "array y")
info = ffi.new("plm_solver_info_t *")
check(lib.plm_solver_info_create(info), "plm_solver_info_create")
check(lib.plm_solve_cgls(pa[0], py[0], px[0], 100, damp, 1e-24, info[0]), "plm_solve_cgls")
reason = ffi.new("plm_stop_reason_t *")
check(lib.plm_solver_info_reason(info[0], reason), "plm_solver_info_reason")

# a float32-sized buffer on the last rank only: every rank gets INVALID_ARG
g = np.zeros(n)
short = g.nbytes // 2 if rank == size - 1 else g.nbytes
bad = lib.plm_array_asarray(px[0], 0, ffi.from_buffer(g), short)
ok_bad = comm.allreduce(int(bad == lib.PLM_ERR_INVALID_ARG), op=MPI.MIN) == 1
check(lib.plm_array_asarray(px[0], 0, ffi.from_buffer(g), g.nbytes), "plm_array_asarray")

gd, gy = 1.0 + 0.5 * (np.arange(n) % 7), 1.0 + 0.25 * (np.arange(n) % 11)
ref = gd * gy / (gd * gd + damp * damp)
err = float(np.max(np.abs(g - ref) / ref))
err = comm.allreduce(err if err == err else np.inf, op=MPI.MAX)

check(lib.plm_solver_info_destroy(info), "plm_solver_info_destroy")
for p, fn in ((px, "array"), (py, "array"), (pdom, "layout"), (pran, "layout"), (pa, "op"), (pdiag, "op"),
              (pc, "comm")):
    check(getattr(lib, f"plm_{fn}_destroy")(p), f"plm_{fn}_destroy")

ok = err < 1e-10 and ok_bad and reason[0] == lib.PLM_STOP_TOLERANCE
if rank == 0:
    print(("VERIFIED" if ok else "FAILED") +
          f": Python cffi (API mode) CGLS on blockdiag(diagonal) n={n}, ranks={size}, max rel error {err:.2e}, "
          f"stop reason {reason[0]}, short buffer refused on every rank: {ok_bad}", flush=True)
sys.exit(0 if ok else 1)
