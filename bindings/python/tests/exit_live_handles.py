"""Interpreter exit with live handles (ctest python_exit_*; not a pytest module).

    mpiexec -n N python3 exit_live_handles.py live|finalized

live: arrays, layouts, operators (library ones, composites, Python-callback blocks), proximal
operators, solver state and communicators (COMM_WORLD, a Split and a Dup sub-communicator), some
in reference cycles, are all alive when the script ends. The package's atexit hook must free them before MPI
is finalized: no crash, no hang (ctest's timeout), and nothing left behind: a hook registered
before the package (so it runs after the package's) checks that every C handle was freed and
every callback context released, and exits 3 otherwise.
finalized: the same, but the script calls MPI.Finalize() itself first; nothing may crash (the
handles are left to the OS then).
"""
import atexit
import os
import sys

mode = sys.argv[1] if len(sys.argv) > 1 else "live"


def check_clean():
    from pylopsmpi import _core, ffi
    left = [h for h in list(_core._live) if h.ptr is not None and h.ptr[0] != ffi.NULL]
    if mode == "live" and (left or _core._ctx or _core._comms):
        sys.stderr.write(f"exit_live_handles: {len(left)} handles, {len(_core._ctx)} callback "
                         f"contexts, {len(_core._comms)} communicators left at exit\n")
        sys.stderr.flush()
        os._exit(3)
    sys.stdout.write(f"exit_live_handles {mode}: clean\n")
    sys.stdout.flush()


atexit.register(check_clean)        # runs after pylopsmpi's hook (atexit is last-in, first-out)

import numpy as np  # noqa: E402
from mpi4py import MPI  # noqa: E402
from scipy.sparse.linalg import LinearOperator  # noqa: E402

import pylopsmpi as pm  # noqa: E402

world = MPI.COMM_WORLD
rank, size = world.rank, world.size
sub = world.Split(color=rank % 2, key=rank)
dup = world.Dup()

x = pm.DistributedArray.to_dist(np.arange(4.0 * size))
xs = pm.DistributedArray.to_dist(np.arange(3.0 * sub.size), base_comm=sub)
xd = pm.DistributedArray(global_shape=(2 * size, 3), base_comm=dup, axis=0)
xd.local_array[:] = 1
y = pm.StackedDistributedArray([x, x.copy()])
block = LinearOperator((4, 4), matvec=lambda v: 2 * v, rmatvec=lambda v: 2 * v, dtype=np.float64)
Op = pm.MPIBlockDiag([block])               # a Python callback block: a live callback context
D = pm.MPIFirstDerivative(4 * size)
C = (Op + 2 * D).H @ Op                    # composites holding the others
r = pm.cgls(Op, x, x.zeros_like(), niter=2)
Ds = pm.MPISecondDerivative(3 * sub.size, base_comm=sub)
z = Ds @ xs
cycle = [Op, x]
cycle.append(cycle)                         # a reference cycle: freed by the hook, not the GC
w = C @ x
x.norm()
# proximal operators (an MPIL2 holding operator and array copies) and a solve with a callback
l2 = pm.proximal.MPIL2(Op=D, b=x, x0=x.zeros_like())
box = pm.proximal.Box(0.0, 1.0)
p = pm.proximal.ProximalGradient(l2, pm.proximal.MPIProxOperator(box), x.zeros_like(), tau=0.1,
                                 niter=2, callback=lambda v: None)

if mode == "finalized":
    world.Barrier()
    MPI.Finalize()
