"""What every tutorial of the gallery shares: where its figures go and a check all ranks agree on.

A tutorial's figures go to the directory named by its first command-line argument, else by the
environment variable PLM_GALLERY_DIR, else the current directory. Only rank 0 draws and saves.
`check` compares a result with its serial NumPy/SciPy reference on every rank and `require` tests
a condition; both agree on the verdict over the communicator and end every rank with exit
status 1 on a failure.
"""
import os
import sys

import matplotlib
matplotlib.use("Agg")                   # no display: CI and batch jobs
import matplotlib.pyplot as plt         # noqa: E402
import numpy as np                      # noqa: E402
from mpi4py import MPI                  # noqa: E402

__all__ = ["plt", "output_dir", "savefig", "check", "require", "rank_colors"]


def output_dir():
    """The figures' directory (made by rank 0 when missing)."""
    d = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("PLM_GALLERY_DIR", ".")
    if MPI.COMM_WORLD.rank == 0:
        os.makedirs(d, exist_ok=True)
    return d


def savefig(fig, name):
    """Rank 0 writes `fig` as output_dir()/name (other ranks only close it)."""
    if MPI.COMM_WORLD.rank == 0:
        path = os.path.join(output_dir(), name)
        fig.savefig(path, dpi=90, bbox_inches="tight")
        print(f"wrote {path}")
    plt.close(fig)


def check(name, got, ref, tol, comm=MPI.COMM_WORLD):
    """Relative error ||got - ref|| / ||ref|| must be <= tol on every rank, else all exit(1)."""
    got, ref = np.asarray(got), np.asarray(ref)
    if got.shape != ref.shape:
        err = np.inf
    else:
        err = float(np.linalg.norm((got - ref).ravel()) / max(np.linalg.norm(ref.ravel()), 1e-300))
    require(f"{name}: relative error {err:.2e} (tolerance {tol:.0e})", err <= tol, comm)
    return err


def require(what, ok, comm=MPI.COMM_WORLD):
    """A condition that must hold on every rank, else all ranks exit(1)."""
    ok = comm.allreduce(bool(ok), op=MPI.LAND)
    if comm.rank == 0:
        print(f"check {what}: {'ok' if ok else 'FAILED'}")
    if not ok:
        sys.exit(1)


def rank_colors(n):
    """n distinct colours, one per rank, for the ownership maps."""
    return plt.get_cmap("tab10")(np.arange(n) % 10)
