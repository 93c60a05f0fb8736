"""A Python program outside the project, using an INSTALLED libpylopsmpi through ctypes
(scripts/install-test runs it under mpiexec with Debian's python3, numpy and mpi4py):

    mpiexec -n 2 python3 consumer_py.py <prefix>/lib/libpylopsmpi.so.0.MINOR

It passes comm.py2f() to plm_comm_create_f and solves the problem of consumer.c's cgls_check
(blockdiag of diagonals, damped CGLS, n = 1000) with the library's arrays wrapping numpy buffers
(zero copy), checks x against the serial float64 solution and prints VERIFIED on rank 0. Then it
unloads the library (dlclose) before mpi4py's MPI_Finalize runs at exit: MPI_Finalize calls the
library's MPI_COMM_SELF attribute delete callback, which must still be mapped (the library is
linked with -z nodelete). A crash at exit fails the test. The argument types restate the 0.3
header by hand, as a ctypes user would (the cffi consumer reads the installed FFI header).
"""
import ctypes as C
import sys

import _ctypes
import numpy as np
from mpi4py import MPI

lib = C.CDLL(sys.argv[1])
P, I, I64, D = C.c_void_p, C.c_int, C.c_int64, C.c_double
PP = C.POINTER(C.c_void_p)
for name, args in {
    "plm_comm_create_f": (I, P, PP),
    "plm_comm_destroy": (PP,),
    "plm_op_diagonal": (I, I64, P, I64, PP),
    "plm_op_blockdiag": (P, I, PP, I, P, PP),
    "plm_op_destroy": (PP,),
    "plm_op_domain": (P, PP),
    "plm_op_range": (P, PP),
    "plm_layout_local_size": (P, C.POINTER(I64)),
    "plm_layout_local_offset": (P, C.POINTER(I64)),
    "plm_layout_destroy": (PP,),
    "plm_array_create_from_layout": (P, I, I, P, I64, PP),
    "plm_array_destroy": (PP,),
    "plm_solve_cgls": (P, P, P, I64, D, D, P),
}.items():
    getattr(lib, name).argtypes = args
    getattr(lib, name).restype = I
lib.plm_last_error.restype = C.c_char_p
PLM_FLOAT64, PLM_MEMORY_HOST = 1, 0


def check(status, what):
    if status != 0:
        raise RuntimeError(f"{what}: status {status}: {lib.plm_last_error().decode()}")


def handle():
    return C.c_void_p()


comm = MPI.COMM_WORLD
n, damp = 1000, 0.5
h = {k: handle() for k in ("comm", "diag", "A", "dom", "ran", "x", "y")}
check(lib.plm_comm_create_f(comm.py2f(), None, C.byref(h["comm"])), "plm_comm_create_f")
off, nloc = I64(), I64()

# the layout first (its local part is this rank's block), then the buffers the arrays wrap
size, rank = comm.Get_size(), comm.Get_rank()
nl = n // size + (1 if rank < n % size else 0)
o = rank * (n // size) + min(rank, n % size)
idx = np.arange(o, o + nl)
d = 1.0 + 0.5 * (idx % 7)
check(lib.plm_op_diagonal(PLM_FLOAT64, nl, d.ctypes.data, d.nbytes, C.byref(h["diag"])), "plm_op_diagonal")
ops = (C.c_void_p * 1)(h["diag"])
check(lib.plm_op_blockdiag(h["comm"], 1, ops, 0, None, C.byref(h["A"])), "plm_op_blockdiag")
check(lib.plm_op_domain(h["A"], C.byref(h["dom"])), "plm_op_domain")
check(lib.plm_op_range(h["A"], C.byref(h["ran"])), "plm_op_range")
check(lib.plm_layout_local_size(h["dom"], C.byref(nloc)), "plm_layout_local_size")
check(lib.plm_layout_local_offset(h["dom"], C.byref(off)), "plm_layout_local_offset")
assert (off.value, nloc.value) == (o, nl), (off.value, nloc.value, o, nl)

x = np.zeros(nl)                      # wrapped: the solve writes into this buffer
y = 1.0 + 0.25 * (idx % 11)
for key, buf, lay in (("x", x, "dom"), ("y", y, "ran")):
    check(lib.plm_array_create_from_layout(h[lay], PLM_FLOAT64, PLM_MEMORY_HOST, buf.ctypes.data, buf.nbytes,
                                           C.byref(h[key])), "plm_array_create_from_layout")
check(lib.plm_solve_cgls(h["A"], h["y"], h["x"], 100, damp, 1e-24, None), "plm_solve_cgls")

# serial float64 reference over the whole vector, compared with this rank's slice
gi = np.arange(n)
gd, gy = 1.0 + 0.5 * (gi % 7), 1.0 + 0.25 * (gi % 11)
ref = gd * gy / (gd * gd + damp * damp)
err = float(np.max(np.abs(x - ref[o:o + nl]) / ref[o:o + nl])) if nl else 0.0
err = comm.allreduce(err if err == err else np.inf, op=MPI.MAX)

for key, fn in (("x", "array"), ("y", "array"), ("dom", "layout"), ("ran", "layout"),
                ("A", "op"), ("diag", "op"), ("comm", "comm")):
    check(getattr(lib, f"plm_{fn}_destroy")(C.byref(h[key])), f"plm_{fn}_destroy")

if rank == 0:
    print(("VERIFIED" if err < 1e-10 else "FAILED") +
          f": Python ctypes CGLS on blockdiag(diagonal) n={n}, ranks={size}, max rel error {err:.2e}",
          flush=True)
# Unload the library as a binding may; mpi4py's MPI_Finalize at exit then runs its callback.
_ctypes.dlclose(lib._handle)
sys.exit(0 if err < 1e-10 else 1)
