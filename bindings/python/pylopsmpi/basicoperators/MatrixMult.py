"""pylops_mpi.basicoperators.MatrixMult: MPIMatrixMult and its helpers active_grid_comm,
local_block_split and block_gather (PyLops-MPI's signatures)."""
import math

import numpy as np

from ._basic import MPIMatrixMult

__all__ = ["MPIMatrixMult", "active_grid_comm", "local_block_split", "block_gather"]


def active_grid_comm(base_comm, N, M):
    """The active square grid for MPIMatrixMult (PyLops-MPI's active_grid_comm): the P ranks of
    base_comm on a P' x P' grid, P' = isqrt(P), rank r at (r // P', r % P'); the first
    d x d of them, d = min(N, M, P'), are active. Returns (comm, rank, row, col, is_active): on
    active ranks a new communicator of the active ranks and the rank, row and column in it; on
    the others (None, rank, row, col, False) in base_comm's numbering. Collective on base_comm
    (MPI_Comm_create_group over the active ranks only)."""
    rank, size = base_comm.Get_rank(), base_comm.Get_size()
    p = math.isqrt(size)
    row, col = divmod(rank, p)
    d = min(int(N), int(M), p)
    if not (row < d and col < d):
        return None, rank, row, col, False
    active = [r for r in range(size) if r // p < d and r % p < d]
    comm = base_comm.Create_group(base_comm.Get_group().Incl(active))
    q = math.isqrt(len(active))
    new_rank = comm.Get_rank()
    new_row, new_col = divmod(new_rank, q)
    return comm, new_rank, new_row, new_col, True


def _square(comm, what):
    size = comm.Get_size()
    p = math.isqrt(size)
    if p * p != size:
        raise RuntimeError(f"{what} must be a square number, provided {size} instead...")
    return p


def local_block_split(global_shape, rank, comm):
    """The (row, column) slices of the block of a 2-D global_shape array that `rank` owns on
    the square process grid of comm (PyLops-MPI's local_block_split): rank r at
    (r // P', r % P'), blocks of ceil(n / P') rows and columns. RuntimeError when the size of
    comm is not a square, ValueError for a rank outside it. Not collective."""
    p = _square(comm, "Number of processes")
    size = comm.Get_size()
    if not (isinstance(rank, (int, np.integer)) and 0 <= rank < size):
        raise ValueError(f"rank must be an integer in [0, {size}), got {rank!r}")
    pr, pc = divmod(int(rank), p)
    nr, nc = (int(s) for s in global_shape)
    br, bc = math.ceil(nr / p), math.ceil(nc / p)
    rs, cs = pr * br, pc * bc
    return slice(rs, min(rs + br, nr)), slice(cs, min(cs + bc, nc))


def block_gather(x, orig_shape, comm):
    """The whole 2-D orig_shape array from the blocks of x, rank r's local array holding the
    (row, column) block local_block_split gives it (PyLops-MPI's block_gather), on every rank.
    RuntimeError when the size of comm is not a square. Collective on comm (an allgather of
    the local arrays)."""
    p = _square(comm, "Communicator size")
    blocks = comm.allgather(np.asarray(x.local_array))
    nr, nc = (int(s) for s in orig_shape)
    br, bc = math.ceil(nr / p), math.ceil(nc / p)
    out = np.zeros((nr, nc), dtype=np.result_type(*[b.dtype for b in blocks]))
    for r, blk in enumerate(blocks[:p * p]):
        pr, pc = divmod(r, p)
        rs, cs = pr * br, pc * bc
        re, ce = min(rs + br, nr), min(cs + bc, nc)
        if blk.size:
            out[rs:re, cs:ce] = blk.reshape(re - rs, ce - cs)
    return out
