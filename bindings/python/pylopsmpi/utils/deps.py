"""pylops_mpi.utils.deps: which optional back ends are on. pylopsmpi's Python package has the
numpy engine only (NCCL and CUDA-aware MPI are the C library's business: docs/gpu.md), so
nccl_enabled is False; cuda_aware_mpi_enabled reads PYLOPS_MPI_CUDA_AWARE as PyLops-MPI does."""
import os

__all__ = ["nccl_enabled"]

nccl_enabled = False
cuda_aware_mpi_enabled = int(os.getenv("PYLOPS_MPI_CUDA_AWARE", 0)) != 0
mpi4py_fft = False


def nccl_import(message=None):
    """PyLops-MPI's message when NCCL cannot be used (always here)."""
    return (f"cupy.cuda.nccl is not used by pylopsmpi's Python package. In order to be able to use "
            f"{message} use the C library's NCCL back end (docs/gpu.md)")


def mpi4py_fft_import(message=None):
    return f"mpi4py_fft is not used by pylopsmpi ({message} runs on the C library's FFT)"
