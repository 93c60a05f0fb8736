"""Plotting of DistributedArrays (PyLops-MPI's pylops_mpi.plotting): plot_distributed_array and
plot_local_arrays. matplotlib is imported when a function is called, so the package does not
need it otherwise."""
from .plotting import plot_distributed_array, plot_local_arrays

__all__ = ["plot_distributed_array", "plot_local_arrays"]
