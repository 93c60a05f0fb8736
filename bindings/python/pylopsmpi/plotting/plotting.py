"""pylops_mpi.plotting.plotting: plot_distributed_array and plot_local_arrays, PyLops-MPI's
figures (rank 0 draws; the gathers are collective)."""
import numpy as np

from ..DistributedArray import DistributedArray, Partition

__all__ = ["plot_distributed_array", "plot_local_arrays"]


def plot_distributed_array(arr):
    """Rank 0 draws the global array next to the map of which rank holds each element (a
    2-D SCATTER array; BROADCAST raises NotImplementedError, anything but a DistributedArray
    TypeError). Collective on the array's communicator (two gathers)."""
    if not isinstance(arr, DistributedArray):
        raise TypeError("Not a DistributedArray")
    if arr.partition is Partition.BROADCAST:
        raise NotImplementedError("Use Scatter for plot")
    owner = DistributedArray(global_shape=arr.global_shape, base_comm=arr.base_comm,
                             partition=arr.partition, axis=arr.axis, local_shapes=arr.local_shapes,
                             dtype=arr.dtype)
    owner[:] = np.full(owner.local_shape, arr.rank)
    full_owner = owner.asarray()
    full = arr.asarray()
    if arr.rank == 0:
        import matplotlib.pyplot as plt
        fig, (ax1, ax2) = plt.subplots(nrows=1, ncols=2, figsize=(18, 5))
        ax1.matshow(np.real(full), cmap="rainbow")
        ax1.set_title("Original Array")
        im2 = ax2.matshow(np.real(full_owner), cmap="rainbow")
        ax2.set_title(f"Distributed over axis {arr.axis}")
        cbar = fig.colorbar(im2)
        cbar.set_ticks(np.arange(arr.size))
        cbar.set_label("Ranks")
        plt.tight_layout()


def plot_local_arrays(arr, title=None, vmin=None, vmax=None):
    """Rank 0 draws each rank's local array (2-D) side by side, titled Rank-i. Collective on the
    array's communicator (a gather to rank 0)."""
    blocks = arr.base_comm.gather(np.asarray(arr.local_array), root=0)
    if arr.rank == 0:
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(nrows=1, ncols=arr.size, figsize=(18, 5))
        ax = [ax] if arr.size == 1 else ax
        for i, b in enumerate(blocks):
            b = np.real(b)
            ax[i].imshow(b, cmap="rainbow", vmin=vmin, vmax=vmax)
            ax[i].set_xticks(np.arange(b.shape[1]))
            ax[i].set_yticks(np.arange(b.shape[0]))
            ax[i].set_title(f"Rank-{i}")
        plt.suptitle(title)
        plt.tight_layout()
