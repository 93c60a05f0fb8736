"""pylops_mpi.basicoperators.Halo: MPIHalo and halo_block_split."""
import math

import numpy as np

from ._basic import MPIHalo

__all__ = ["MPIHalo", "halo_block_split"]


def halo_block_split(global_shape, comm, grid_shape=None):
    """The slices of the block of a `global_shape` array this rank owns on the process grid
    `grid_shape` (PyLops-MPI's halo_block_split, with its signature): MPIHalo's split (the
    library's plm_op_halo rule). grid_shape None puts every rank on the last axis; its product
    must be the size of comm (else ValueError). Along an axis of g points on p ranks, the rank at
    grid coordinate c holds [c b, min(g, (c + 1) b)) with b = ceil(g / p), the last coordinate's
    slice open-ended (stop None), as the reference returns it. Rank r sits at the row-major
    coordinate of r in the grid (Open MPI's and MPICH's Cartesian order without reordering). Not
    collective."""
    global_shape = tuple(int(g) for g in global_shape)
    ndim, size = len(global_shape), comm.Get_size()
    if grid_shape is None:
        grid_shape = (1,) * (ndim - 1) + (size,)
    grid_shape = tuple(int(p) for p in grid_shape)
    if len(grid_shape) != ndim or math.prod(grid_shape) != size:
        raise ValueError(f"grid_shape {grid_shape} does not match comm size {size}")
    coords = np.unravel_index(comm.Get_rank(), grid_shape)
    slices = []
    for g, p, c in zip(global_shape, grid_shape, coords):
        b = math.ceil(g / p)
        start = int(c) * b
        slices.append(slice(start, None) if c == p - 1 else slice(start, min(start + b, g)))
    return tuple(slices)
